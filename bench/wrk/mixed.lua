-- wrk script: a mix at a fixed rate — 70% runs, 10% cache-hit submissions of the same graph,
-- 10% GET /v1/graphs/{id}, 10% GET /metrics. Environment as run.lua, plus AF_GRAPH_FILE (the
-- JSON graph whose id is AF_GRAPH_ID, resubmitted as a plan-cache hit).
local common = dofile((os.getenv("AF_WRK_DIR") or "bench/wrk") .. "/common.lua")
local id = os.getenv("AF_GRAPH_ID") or error("AF_GRAPH_ID is not set")
local f = assert(io.open(os.getenv("AF_GRAPH_FILE") or "examples/diamond.json", "rb"))
local graph = f:read("*a")
f:close()
local n = 0
local reqs

function init(args)
    local h = {["Content-Type"] = "application/json"}
    reqs = {
        wrk.format("POST", "/v1/graphs/" .. id .. "/run", h, '{"rounds": 1}'),
        wrk.format("POST", "/v1/graphs", h, graph),
        wrk.format("GET", "/v1/graphs/" .. id),
        wrk.format("GET", "/metrics"),
    }
end

function request()
    n = n + 1
    local k = n % 10
    if k < 7 then return reqs[1] end
    return reqs[k - 5]
end

setup = common.setup
delay = common.delay
response = common.response
done = common.done("mixed")
