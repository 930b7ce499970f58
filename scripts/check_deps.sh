#!/usr/bin/env bash
# check_deps.sh — every #include "..." in the tree against the module table of docs/design.md.
#
# The table (| folder | what it owns | headers | may depend on |) says which headers each module
# exports and which modules it may use; the second table (| header | may be included by |) lists
# the library-internal headers shared beyond their folder. A file may include a header of its
# own module, an exported header of a module it may depend on, or a shared internal header that
# names its module. Anything else — a private header of another module, a module not in its
# list — is reported as FILE:LINE with the header, its owner and the rule, and the script exits 1.
# Public headers nobody claims, and includes that point into a folder the table does not know,
# are errors too. Includes that resolve to no file of the tree (generated or system headers)
# are not checked.
#   scripts/check_deps.sh [--root DIR] [--design FILE]   (defaults: the repository, docs/design.md)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
design=""
while [ $# -gt 0 ]; do
    case $1 in
    --root) root=$(cd "$2" && pwd); shift ;;
    --design) design=$2; shift ;;
    -h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "check_deps.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
[ -n "$design" ] || design=$root/docs/design.md
exec python3 - "$root" "$design" <<'PYEOF'
import os, re, subprocess, sys

root, design = sys.argv[1], sys.argv[2]
text = open(design, encoding="utf-8").read()


def rows(header_re):
    """The rows (lists of cells) of the first markdown table whose header matches."""
    lines = text.splitlines()
    for i, l in enumerate(lines):
        if re.match(header_re, l.strip()):
            out = []
            for r in lines[i + 2:]:
                if not r.strip().startswith("|"):
                    break
                out.append([c.strip() for c in r.strip().strip("|").split("|")])
            return out
    sys.exit("check_deps: %s has no table matching %r" % (design, header_re))


modules, exports, deps = [], {}, {}
for c in rows(r"\|\s*folder\s*\|\s*what it owns\s*\|\s*headers\s*\|\s*may depend on\s*\|"):
    m = c[0].strip("`").rstrip("/")
    modules.append(m)
    for h in re.findall(r"`([^`]+)`", c[2]):
        exports[h] = m
    d = c[3]
    deps[m] = {"*"} if d == "*" else set() if d in ("—", "-", "") else {
        x.strip() for x in d.split(",")}
shared = {}
for c in rows(r"\|\s*header\s*\|\s*may be included by\s*\|"):
    shared[c[0].strip("`")] = {x.strip() for x in c[1].split(",")}

try:
    if not os.path.exists(os.path.join(root, ".git")):
        raise OSError("not a git checkout")
    files = subprocess.run(["git", "-C", root, "ls-files", "--cached", "--others",
                            "--exclude-standard", "*.c", "*.h"], check=True,
                           capture_output=True, text=True).stdout.split()
except (OSError, subprocess.CalledProcessError):
    files = [os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root)
             for f in fs if f.endswith((".c", ".h")) and "/build" not in d]


def module_of(path):
    if path.startswith("include/"):
        return exports.get(path[len("include/"):], "include")
    top = path.split("/")[0]
    return top if top in modules else None


errors = []
for h in sorted(f for f in files if f.startswith("include/arenaflow/")):
    if h[len("include/"):] not in exports:
        errors.append("%s: public header claimed by no module in %s" % (h, design))
inc_re = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
for f in sorted(files):
    me = module_of(f)
    if me is None or not os.path.exists(os.path.join(root, f)):
        continue
    for n, line in enumerate(open(os.path.join(root, f), encoding="utf-8", errors="replace"), 1):
        m = inc_re.match(line)
        if not m:
            continue
        inc = m.group(1)
        if inc in exports:
            target, owner, public = "include/" + inc, exports[inc], True
        else:
            cand = [os.path.normpath(os.path.join(root, inc)),
                    os.path.normpath(os.path.join(root, os.path.dirname(f), inc))]
            hit = next((c for c in cand if os.path.isfile(c)), None)
            if hit is None:
                continue  # generated or system header: not the tree's
            target = os.path.relpath(hit, root)
            owner, public = module_of(target), False
            if owner is None:
                errors.append("%s:%d: includes %s, in a folder the module table does not know"
                              % (f, n, target))
                continue
        if owner == me or "*" in deps[me]:
            continue
        if public and owner in deps[me]:
            continue
        if not public and me in shared.get(target, ()):
            continue
        if not public:
            why = "a private header of module %s" % owner
        else:
            why = "module %s's header, and %s may depend on %s only" % (
                owner, me, ", ".join(sorted(deps[me])) or "nothing")
        errors.append("%s:%d: includes \"%s\": %s (module table: %s)"
                      % (f, n, inc, why, os.path.relpath(design, root)))
for e in errors:
    print(e)
if errors:
    print("check_deps: %d include(s) against the module table" % len(errors))
    sys.exit(1)
print("check_deps: ok (%d files, %d modules, every include allowed by %s)"
      % (len(files), len(modules), os.path.relpath(design, root)))
PYEOF
