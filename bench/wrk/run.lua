-- wrk script: POST /v1/graphs/{id}/run at a fixed rate.
--   AF_GRAPH_ID  graph id to run (required)
--   AF_RATE      total requests/s over all connections (default 500)
--   AF_CONNS     connections wrk opens (must equal wrk -c; default 2)
--   AF_ROUNDS    rounds per request (default 1)
-- Debian's wrk 4.1 has no -R (that is wrk2): the rate is kept with delay() (common.lua), which
-- spaces each connection's requests and corrects itself once per second toward AF_RATE/AF_CONNS.
-- Latencies are per request as wrk measures them (from send), so a server stall lowers the rate
-- instead of growing the tail (no coordinated-omission correction; bench_daemon_client does
-- that); the summary prints the achieved rate next to the target so that shows.
local common = dofile((os.getenv("AF_WRK_DIR") or "bench/wrk") .. "/common.lua")
local id = os.getenv("AF_GRAPH_ID") or error("AF_GRAPH_ID is not set")
local rounds = tonumber(os.getenv("AF_ROUNDS") or "1")

wrk.method = "POST"
wrk.path = "/v1/graphs/" .. id .. "/run"
wrk.body = string.format('{"rounds": %d}', rounds)
wrk.headers["Content-Type"] = "application/json"

setup = common.setup
delay = common.delay
response = common.response
done = common.done("run")
