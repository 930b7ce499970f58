/*
 * ONNX importer — reading the protobuf, the value table, mapping onto the graph model.
 *
 * Algorithm: the model is decoded with protobuf-c (C code generated at build time from the
 * system's onnx.proto; its allocator is routed through af__malloc/af__free so the OOM tests
 * reach it; the large tensor payloads are located first and left out of the unpacked copy,
 * onnx_map.c). One pass over the nodes, in topological order (the file's, or Kahn's when the
 * file is not sorted: onnx_order.c), keeps a table of values (tensor names -> element type,
 * shape, small folded values, where the constant bytes are):
 *   1. initializers are constants; graph inputs take their declared types, with the user's dims
 *      ("name=1,3,224,224", or "batch_size=1" for a symbolic dim) applied on top;
 *   2. each node runs its shape rule (onnx_shape.c) and folding (onnx_fold.c); a node whose
 *      outputs all fold to known values is dropped and its outputs become constants (this is how
 *      Shape -> Gather -> Concat -> Reshape chains disappear); Constant nodes are dropped too;
 *      an If whose condition folds is replaced by the nodes of the branch it takes, an If whose
 *      condition is only known at run time keeps both branches, each node guarded by the
 *      condition and its branch (the executor runs the taken one), the outer values each
 *      branch reads passed through gates that read the condition (onnx_gate.c), and an If node
 *      reading both branches' outputs (a conservative plan); Loop/Scan are rejected by name,
 *      or with opaque_control_flow kept as one node that also reads the outer values its body
 *      reads;
 *   3. with use_declared, a shape the model declares fills what inference left unknown, and a
 *      contradiction is an error (onnx_inputs.c);
 *   4. an output whose size stays unknown gets the reason why (onnx_dyn.c);
 * then onnx_emit.c turns every value still read by a kept node (or a graph input/output) into a
 * tensor and every kept node into a node; a view op's output becomes an alias of its input;
 * constants get their bytes (onnx_data.c: mapped in place or copied; external files through
 * onnx_ext.c). af_onnx_load maps the file; the graph keeps the mapping while it points into it.
 *
 * Invariants: values are addressed by index (the table grows); a value has at most one
 * producer; every protobuf string is checked for NULL before use, and every tensor's data
 * size is checked against its dims, so corrupt files give AF_EPARSE, not a crash.
 * Threading: no global state; reentrant.
 */
#include "arenaflow/onnx.h"
#include "common/common_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef AF_HAVE_ONNX
#include "graph/onnx_int.h"
#include "graph/onnx_wire.h"

typedef af__onnx_imp_t imp_t;

/* ---- protobuf allocator through the library hooks ------------------------------------- */

/* allocator_data points to an int set when an allocation failed (OOM vs corrupt input). */
static void *pb_alloc(void *data, size_t size)
{
    void *p = af__malloc(size ? size : 1);
    if (!p)
        *(int *)data = 1;
    return p;
}

static void pb_free(void *data, void *p)
{
    (void)data;
    af__free(p);
}

/* ---- value table ---------------------------------------------------------------------- */

static int32_t val_find(const imp_t *im, const char *name)
{
    if (!im->hash_cap)
        return -1;
    for (size_t i = af__graph_hash_str(name) & (im->hash_cap - 1);;
         i = (i + 1) & (im->hash_cap - 1)) {
        int32_t id = im->hash[i];
        if (id < 0 || !strcmp(im->vals[id].name, name))
            return id;
    }
}

static int hash_insert(imp_t *im, int32_t id)
{
    if ((im->n_vals + 1) * 2 > im->hash_cap) {
        size_t cap = im->hash_cap ? im->hash_cap * 2 : 256;
        int32_t *h = af__malloc(cap * sizeof(*h));
        if (!h)
            return AF_ENOMEM;
        memset(h, 0xff, cap * sizeof(*h));
        af__free(im->hash);
        im->hash = h;
        im->hash_cap = cap;
        for (size_t v = 0; v < im->n_vals; v++)
            if ((int32_t)v != id)
                hash_insert(im, (int32_t)v);
    }
    size_t i = af__graph_hash_str(im->vals[id].name) & (im->hash_cap - 1);
    while (im->hash[i] >= 0)
        i = (i + 1) & (im->hash_cap - 1);
    im->hash[i] = id;
    return 0;
}

int32_t af__onnx_val_find(const af__onnx_imp_t *im, const char *name)
{
    return val_find(im, name);
}

/* Id of the value called name, created (unknown shape) when new. -1 on OOM. */
int32_t af__onnx_val_get(af__onnx_imp_t *im, const char *name)
{
    int32_t id = val_find(im, name);
    if (id >= 0)
        return id;
    if (im->n_vals >= INT32_MAX / 2 ||
        af__grow((void **)&im->vals, &im->cap_vals, im->n_vals + 1, sizeof(*im->vals)))
        return -1;
    id = (int32_t)im->n_vals;
    af__onnx_val_t *v = &im->vals[id];
    memset(v, 0, sizeof(*v));
    v->name = name;
    v->rank = -1;
    v->alias_of = v->producer = v->data_src = -1;
    im->n_vals++;
    if (hash_insert(im, id)) {
        im->n_vals--;
        return -1;
    }
    return id;
}

/* ---- nodes ---------------------------------------------------------------------------- */

const char *af__onnx_node_label(const Onnx__NodeProto *n)
{
    if (n->name && n->name[0])
        return n->name;
    if (n->n_output && n->output[0][0])
        return n->output[0]; /* unnamed: the tensor it makes identifies it */
    return "(unnamed)";
}

int af__onnx_keep_node(imp_t *im, const Onnx__NodeProto *n, const int32_t *io, int n_in, int n_out)
{
    if (af__grow((void **)&im->nodes, &im->cap_nodes, im->n_nodes + 1, sizeof(*im->nodes)))
        return AF_ENOMEM;
    int32_t *copy = af__malloc((size_t)(n_in + n_out ? n_in + n_out : 1) * sizeof(int32_t));
    if (!copy)
        return AF_ENOMEM;
    memcpy(copy, io, (size_t)(n_in + n_out) * sizeof(int32_t));
    im->nodes[im->n_nodes++] = (af__onnx_knode_t){n, copy, n_in, n_out, -1, 0, -1};
    for (int i = 0; i < n_in + n_out; i++)
        if (io[i] >= 0)
            im->vals[io[i]].used = 1;
    for (int i = 0; i < n_out; i++)
        if (io[n_in + i] >= 0)
            im->vals[io[n_in + i]].producer = (int)im->n_nodes - 1;
    return 0;
}

int af__onnx_note_why(imp_t *im, const Onnx__NodeProto *n, af__onnx_val_t *v, const char *why)
{
    af__onnx_ctx_t c = {.im = im, .node = n, .err = im->err};
    snprintf(c.why, sizeof(c.why), "%s", why);
    return af__onnx_note_dynamic(&c, v, 1) ? af__err(im->err, AF_ENOMEM, "out of memory") : 0;
}

/* Adds to io[*n] every outer value a subgraph (and its nested subgraphs) reads. */
static int add_captures(imp_t *im, const Onnx__GraphProto *g, int32_t *io, int *n, int depth)
{
    if (depth > AF__ONNX_MAX_DEPTH)
        return af__err(im->err, AF_ENOTSUP, "subgraphs nested more than %d deep",
                       AF__ONNX_MAX_DEPTH);
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *nd = g->node[i];
        for (size_t k = 0; k < nd->n_input; k++) {
            int32_t id = nd->input[k][0] ? val_find(im, nd->input[k]) : -1;
            int dup = id < 0;
            for (int j = 0; j < *n && !dup; j++)
                dup = io[j] == id;
            if (dup)
                continue;
            if (*n >= 32)
                return af__err(im->err, AF_ENOTSUP,
                               "op %s, node '%s': subgraph reads more than 32 outer values",
                               nd->op_type ? nd->op_type : "?", af__onnx_node_label(nd));
            io[(*n)++] = id;
        }
        for (size_t a = 0; a < nd->n_attribute; a++) {
            const Onnx__AttributeProto *at = nd->attribute[a];
            int rc = at->g ? add_captures(im, at->g, io, n, depth + 1) : 0;
            for (size_t k = 0; !rc && k < at->n_graphs; k++)
                rc = add_captures(im, at->graphs[k], io, n, depth + 1);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/*
 * Loop, Scan, SequenceMap... with opaque_control_flow: one node whose inputs are its own plus
 * every outer value its body reads (so they stay alive until it runs) and whose outputs are
 * dynamic (their sizes depend on the iterations). The body's own memory is not planned.
 */
static int import_opaque(imp_t *im, const Onnx__NodeProto *n, int32_t *io, int ni, int no)
{
    int32_t ins[32], outs[32];
    int nin = 0, rc;
    for (int i = 0; i < ni; i++)
        ins[nin++] = io[i];
    for (size_t a = 0; a < n->n_attribute; a++) {
        const Onnx__AttributeProto *at = n->attribute[a];
        rc = at->g ? add_captures(im, at->g, ins, &nin, 1) : 0;
        for (size_t k = 0; !rc && k < at->n_graphs; k++)
            rc = add_captures(im, at->graphs[k], ins, &nin, 1);
        if (rc)
            return rc;
    }
    memcpy(outs, io + ni, (size_t)no * sizeof(int32_t));
    memcpy(io, ins, (size_t)nin * sizeof(int32_t));
    memcpy(io + nin, outs, (size_t)no * sizeof(int32_t));
    for (int i = 0; i < no; i++)
        if (io[nin + i] >= 0 &&
            ((im->opts->use_declared &&
              (rc = af__onnx_merge_declared(im, &im->vals[io[nin + i]], ""))) ||
             (rc =
                  af__onnx_note_why(im, n, &im->vals[io[nin + i]],
                                    "control flow imported as one opaque node: output sizes depend "
                                    "on the iterations"))))
            return rc;
    return af__onnx_keep_node(im, n, io, nin, no) ? af__err(im->err, AF_ENOMEM, "out of memory")
                                                  : 0;
}

static int check_node(imp_t *im, const Onnx__NodeProto *n, size_t idx)
{
    if (!n->op_type || !n->op_type[0])
        return af__err(im->err, AF_EPARSE, "node %zu ('%s') has no op type", idx,
                       af__onnx_node_label(n));
    if (n->n_input > 32 || n->n_output > 32)
        return af__err(im->err, AF_ENOTSUP, "op %s, node '%s': more than 32 inputs or outputs",
                       n->op_type, af__onnx_node_label(n));
    for (size_t i = 0; i < n->n_attribute; i++)
        if (!n->attribute[i]->name)
            return af__err(im->err, AF_EPARSE, "op %s, node '%s': attribute without a name",
                           n->op_type, af__onnx_node_label(n));
    return 0;
}

/* Runs one node: shapes, folding, then keep it or drop it. */
static int run_node(imp_t *im, const Onnx__NodeProto *n, int depth)
{
    int32_t io[64];
    af__onnx_val_t absent[32]; /* stand-ins for omitted optional outputs */
    int ni = (int)n->n_input, no = (int)n->n_output, rc;
    for (int i = 0; i < ni + no; i++) {
        const char *nm = i < ni ? n->input[i] : n->output[i - ni];
        io[i] = nm[0] ? af__onnx_val_get(im, nm) : -1;
        if (nm[0] && io[i] < 0)
            return af__err(im->err, AF_ENOMEM, "out of memory");
    }
    const char *nname = af__onnx_node_label(n);
    for (int i = ni; i < ni + no; i++) {
        af__onnx_val_t *v = io[i] >= 0 ? &im->vals[io[i]] : NULL;
        for (int k = 0; v && k < ni; k++)
            if (io[k] == io[i])
                return af__err(im->err, AF_EPARSE, "op %s, node '%s': reads its own output '%s'",
                               n->op_type, nname, v->name);
        if (v && (v->producer >= 0 || v->is_const || v->is_input || v->vals || v->rank >= 0))
            return af__err(im->err, AF_EPARSE, "op %s, node '%s': tensor '%s' is produced twice",
                           n->op_type, nname, v->name);
    }
    int is_default = !n->domain || !n->domain[0] || !strcmp(n->domain, "ai.onnx");
    if (is_default && !strcmp(n->op_type, "If")) {
        const af__onnx_val_t *cond = ni > 0 && io[0] >= 0 ? &im->vals[io[0]] : NULL;
        if (depth >= AF__ONNX_MAX_DEPTH || !cond)
            return af__err(im->err, AF_ENOTSUP, "op If, node '%s': %s", nname,
                           cond ? "If nested too deeply" : "no condition");
        if (af__onnx_numel(cond) == 1 && af__onnx_vals_known(cond))
            return af__onnx_inline_if(im, n, cond, depth);
        return af__onnx_import_both(im, n, io, ni, no, depth);
    }
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->g || n->attribute[i]->n_graphs) {
            if (im->opts->opaque_control_flow)
                return import_opaque(im, n, io, ni, no);
            return af__err(im->err, AF_ENOTSUP,
                           "op %s, node '%s': control flow (subgraph attribute '%s') is not "
                           "supported (opaque_control_flow imports it as one node)",
                           n->op_type, nname, n->attribute[i]->name);
        }
    af__onnx_ctx_t c = {
        .im = im, .node = n, .n_in = ni, .n_out = no, .opset = im->opset, .err = im->err};
    for (int i = 0; i < ni + no; i++) {
        af__onnx_val_t *v = io[i] >= 0 ? &im->vals[io[i]] : NULL;
        if (i < ni)
            c.in[i] = v;
        else
            c.out[i - ni] = v ? v : &absent[i - ni];
        if (!v && i >= ni)
            absent[i - ni] = (af__onnx_val_t){.name = "", .rank = -1, .alias_of = -1};
    }
    rc = af__onnx_infer(&c); /* custom domains: no rule, outputs unknown */
    if (!rc && is_default && !im->opts->keep_folded)
        rc = af__onnx_fold_bytes(&c);
    for (int i = 0; i < no; i++)
        if (io[ni + i] < 0)
            af__free(absent[i].vals);
    if (rc)
        return rc == AF_ENOMEM ? af__err(im->err, rc, "out of memory") : rc;
    int folded = !im->opts->keep_folded && no > 0, is_out = 0;
    for (int i = 0; i < no; i++) {
        af__onnx_val_t *v = c.out[i];
        if (io[ni + i] < 0)
            continue;
        if (im->opts->use_declared && (rc = af__onnx_merge_declared(im, v, "")))
            return rc;
        if ((rc = af__onnx_note_dynamic(&c, v, is_default)))
            return rc;
        is_out |= v->is_output;
        if (!v->is_const && !af__onnx_vals_known(v))
            folded = 0;
    }
    if (is_default && !strcmp(n->op_type, "Constant") && !is_out)
        folded = 1;
    int view =
        is_default && af__onnx_is_view(n->op_type) && ni > 0 && io[0] >= 0 && no > 0 && io[ni] >= 0;
    int all_const = 1; /* a view of a constant is a constant when its shape input is too */
    for (int i = 0; i < ni; i++)
        all_const &= io[i] < 0 || im->vals[io[i]].is_const;
    if (view && all_const && !im->opts->keep_folded) {
        folded = 1;
        im->vals[io[ni]].data_src = io[0];
    }
    if (folded && !is_out) {
        for (int i = 0; i < no; i++)
            if (io[ni + i] >= 0)
                im->vals[io[ni + i]].is_const = 1;
        return 0;
    }
    if (view && !im->vals[io[0]].is_const)
        im->vals[io[ni]].alias_of = io[0];
    for (int i = 0; i < no; i++)
        if (io[ni + i] >= 0) {
            im->vals[io[ni + i]].is_const = 0;
            im->vals[io[ni + i]].data_src = -1;
        }
    return af__onnx_keep_node(im, n, io, ni, no) ? af__err(im->err, AF_ENOMEM, "out of memory") : 0;
}

int af__onnx_run_graph(imp_t *im, const Onnx__GraphProto *g, int depth)
{
    int rc;
    for (size_t i = 0; i < g->n_initializer; i++) {
        const Onnx__TensorProto *t = g->initializer[i];
        if (!t->name || !t->name[0])
            return af__err(im->err, AF_EPARSE, "initializer %zu has no name", i);
        int32_t id = af__onnx_val_get(im, t->name);
        if (id < 0)
            return af__err(im->err, AF_ENOMEM, "out of memory");
        af__onnx_val_t *v = &im->vals[id];
        if (v->is_const || v->producer >= 0 || v->is_input || v->rank >= 0)
            return af__err(im->err, AF_EPARSE, "initializer '%s' defined twice", t->name);
        af__free(v->vals);
        v->vals = NULL;
        if ((rc = af__onnx_tensor_decode(im, t, v, im->err)))
            return rc;
        v->is_const = 1;
    }
    for (size_t i = 0; i < g->n_value_info; i++) {
        const Onnx__ValueInfoProto *vi = g->value_info[i];
        int32_t id = vi->name && vi->name[0] ? af__onnx_val_get(im, vi->name) : -2;
        if (id == -1)
            return af__err(im->err, AF_ENOMEM, "out of memory");
        if (id >= 0 && im->opts->use_declared)
            im->vals[id].declared = af__onnx_tensor_type(vi);
    }
    for (size_t i = 0; i < g->n_node; i++)
        if ((rc = check_node(im, g->node[i], i)))
            return rc;
    int32_t *order = NULL;
    if (g->n_node > 1 && af__onnx_node_order(g, &order))
        return af__err(im->err, AF_ENOMEM, "out of memory");
    for (size_t i = 0; i < g->n_node && !rc; i++)
        rc = run_node(im, g->node[order ? (size_t)order[i] : i], depth);
    af__free(order);
    return rc;
}

/* ---- entry points --------------------------------------------------------------------- */

void af_onnx_opts_init(af_onnx_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->use_declared = 1;
}

int af_onnx_available(void)
{
    return 1;
}

static int opts_declared(const imp_t *im)
{
    return im->opts->use_declared;
}

static int64_t default_opset(const Onnx__ModelProto *m)
{
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        if (!o->domain || !o->domain[0] || !strcmp(o->domain, "ai.onnx"))
            return o->has_version ? o->version : 1;
    }
    return 1;
}

static int import_model(imp_t *im, const Onnx__ModelProto *m, af_graph_t **out)
{
    const Onnx__GraphProto *g = m->graph;
    if (!g)
        return af__err(im->err, AF_EPARSE, "not an ONNX model: no graph");
    im->opset = default_opset(m);
    int rc;
    for (size_t i = 0; i < g->n_output; i++) {
        const Onnx__ValueInfoProto *vi = g->output[i];
        if (!vi->name || !vi->name[0])
            return af__err(im->err, AF_EPARSE, "graph output %zu has no name", i);
        int32_t id = af__onnx_val_get(im, vi->name);
        if (id < 0)
            return af__err(im->err, AF_ENOMEM, "out of memory");
        im->vals[id].is_output = 1;
        if (opts_declared(im))
            im->vals[id].declared = af__onnx_tensor_type(vi);
    }
    /* Initializers first so inputs that repeat them (IR < 4) are recognised as constants. */
    Onnx__GraphProto init_only = {.n_initializer = g->n_initializer, .initializer = g->initializer};
    if ((rc = af__onnx_run_graph(im, &init_only, 0)) || (rc = af__onnx_setup_inputs(im, g)))
        return rc;
    Onnx__GraphProto rest = *g;
    rest.n_initializer = 0;
    if ((rc = af__onnx_run_graph(im, &rest, 0)))
        return rc;
    for (size_t i = 0; i < g->n_output && im->opts->use_declared; i++) {
        af__onnx_val_t *v = &im->vals[val_find(im, g->output[i]->name)];
        if (!v->declared)
            v->declared = af__onnx_tensor_type(g->output[i]);
        if ((rc = af__onnx_merge_declared(im, v, " (graph output)")))
            return rc;
    }
    return af__onnx_emit(im, m->graph->name, out);
}

/* Frees what one import pass built (values, kept nodes, synthetic nodes, bindings, copied and
 * folded bytes), keeping the model's payload map and external files. */
static void imp_clear(imp_t *im)
{
    for (size_t i = 0; i < im->n_vals; i++) {
        af__free(im->vals[i].vals);
        af__free(im->vals[i].why);
    }
    for (size_t i = 0; i < im->n_nodes; i++)
        af__free(im->nodes[i].io);
    for (size_t i = 0; i < im->n_synth; i++)
        af__free(im->synth[i]);
    af__free(im->synth);
    af__free(im->vals);
    af__free(im->hash);
    af__free(im->nodes);
    af__free(im->binds);
    af__store_unref(im->heap);
    for (size_t i = 0; i < im->n_folded; i++)
        af__free(im->folded[i]);
    af__free(im->folded);
    im->synth = NULL, im->n_synth = im->cap_synth = 0;
    im->vals = NULL, im->n_vals = im->cap_vals = 0;
    im->hash = NULL, im->hash_cap = 0;
    im->nodes = NULL, im->n_nodes = im->cap_nodes = 0;
    im->binds = NULL, im->n_binds = im->cap_binds = 0;
    im->heap = NULL, im->heap_used = 0;
    im->folded = NULL, im->n_folded = im->cap_folded = 0, im->folded_bytes = 0;
    im->opset = 0;
    im->restart = 0;
}

static void imp_free(imp_t *im)
{
    imp_clear(im);
    af__onnx_ext_free(im);
    af__onnx_map_free(&im->map);
}

/*
 * Imports len model bytes. store: the storage the bytes live in when the graph may point into
 * them (a mapped file), NULL when they are only borrowed for the call. dir: the model's
 * directory (external data), or NULL.
 */
static int load_bytes(const uint8_t *data, size_t len, af__store_t *store, const char *dir,
                      const af_onnx_opts_t *opts, af_graph_t **out, af_error_t *err)
{
    /* Nesting depth and decoded size are checked on the original bytes, before anything
     * (the payload locator, protobuf-c's recursive unpack) walks them. */
    int rc = af__onnx_wire_check(data, len, err);
    if (rc != 0)
        return rc;
    imp_t im = {.opts = opts, .err = err, .base_store = store, .model_dir = dir};
    int oom = 0;
    ProtobufCAllocator pb_allocator = {pb_alloc, pb_free, &oom};
    if (af__onnx_map_strip(data, len, &im.map)) {
        imp_free(&im);
        return af__err(err, AF_ENOMEM, "out of memory locating the model's tensor data");
    }
    const uint8_t *pb = im.map.stripped ? im.map.stripped : data;
    size_t pblen = im.map.stripped ? im.map.stripped_len : len;
    Onnx__ModelProto *m = onnx__model_proto__unpack(&pb_allocator, pblen, pb);
    af__onnx_map_release_stripped(&im.map); /* unpacked: the stripped copy is not needed */
    if (!m && oom)
        rc = af__err(err, AF_ENOMEM, "out of memory decoding the ONNX model");
    else if (!m)
        rc = af__err(err, AF_EPARSE,
                     "not a valid ONNX model: protobuf decoding failed (truncated or corrupt "
                     "file)");
    else
        rc = import_model(&im, m, out);
    /* an If branch found dead (import_both): import again without it */
    while (rc == AF_ESHAPE && im.restart) {
        imp_clear(&im);
        if (err)
            af_error_clear(err);
        rc = import_model(&im, m, out);
    }
    imp_free(&im);
    if (m)
        onnx__model_proto__free_unpacked(m, &pb_allocator);
    return rc;
}

int af_onnx_load_mem(const void *data, size_t len, const af_onnx_opts_t *opts, af_graph_t **out,
                     af_error_t *err)
{
    af_onnx_opts_t def;
    if (!opts) {
        af_onnx_opts_init(&def);
        opts = &def;
    }
    if (!out || (!data && len))
        return af__err(err, AF_EINVAL, "af_onnx_load_mem: NULL argument");
    return load_bytes(data, len, NULL, NULL, opts, out, err);
}

/* Reads a file that cannot be mapped (a pipe, /dev/stdin) into an af__malloc'd buffer. */
static int read_all(const char *path, char **buf, size_t *len, af_error_t *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return af__err(err, AF_EIO, "%s: %s", path, strerror(errno));
    size_t cap = 0;
    int rc = 0;
    *buf = NULL;
    *len = 0;
    for (;;) {
        if (af__grow((void **)buf, &cap, *len + 65536, 1)) {
            rc = af__err(err, AF_ENOMEM, "out of memory reading %s", path);
            break;
        }
        size_t got = fread(*buf + *len, 1, cap - *len, f);
        *len += got;
        if (got == 0) {
            if (ferror(f))
                rc = af__err(err, AF_EIO, "%s: read error", path);
            break;
        }
    }
    fclose(f);
    if (rc) {
        af__free(*buf);
        *buf = NULL;
    }
    return rc;
}

int af_onnx_load(const char *path, const af_onnx_opts_t *opts, af_graph_t **out, af_error_t *err)
{
    if (!path || !out)
        return af__err(err, AF_EINVAL, "af_onnx_load: NULL argument");
    af_onnx_opts_t def;
    if (!opts) {
        af_onnx_opts_init(&def);
        opts = &def;
    }
    char *dir = af__path_dir(path);
    if (!dir)
        return af__err(err, AF_ENOMEM, "out of memory");
    af__store_t *st = NULL;
    char *buf = NULL;
    size_t len = 0;
    af_error_t merr;
    int rc = af__store_map(path, &st, &merr);
    if (rc == AF_EIO && access(path, R_OK) == 0) /* not a regular file: read it */
        rc = read_all(path, &buf, &len, err);
    else if (rc && err)
        *err = merr;
    if (!rc)
        rc = load_bytes(st ? st->base : (const uint8_t *)buf, st ? st->len : len, st, dir, opts,
                        out, err);
    if (rc && err && err->msg[0] && strncmp(err->msg, path, strlen(path))) {
        char tmp[AF_ERROR_MSG_MAX];
        snprintf(tmp, sizeof(tmp), "%s", err->msg);
        af__err(err, rc, "%s: %s", path, tmp);
    }
    af__store_unref(st); /* the graph holds its own references */
    af__free(buf);
    af__free(dir);
    return rc;
}

#else /* !AF_HAVE_ONNX: the library was built without protobuf-c */

void af_onnx_opts_init(af_onnx_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->use_declared = 1;
}

int af_onnx_available(void)
{
    return 0;
}

int af_onnx_load_mem(const void *data, size_t len, const af_onnx_opts_t *opts, af_graph_t **out,
                     af_error_t *err)
{
    return af__err(err, AF_ENOTSUP, "ONNX support is not built into this arenaflow");
}

int af_onnx_load(const char *path, const af_onnx_opts_t *opts, af_graph_t **out, af_error_t *err)
{
    return af__err(err, AF_ENOTSUP, "ONNX support is not built into this arenaflow");
}
#endif
