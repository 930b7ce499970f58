-- wrk script: GET /healthz at a fixed rate — the reference (HTTP alone, no arenaflow work).
-- Same environment as run.lua (AF_RATE, AF_CONNS).
local common = dofile((os.getenv("AF_WRK_DIR") or "bench/wrk") .. "/common.lua")
wrk.method = "GET"
wrk.path = "/healthz"
setup = common.setup
delay = common.delay
response = common.response
done = common.done("healthz")
