-- Shared pieces of the wrk scripts: fixed-rate pacing (self-correcting, see M.delay), error counting across wrk threads, and a
-- one-line summary (achieved req/s, p50/p99/p99.9 in microseconds, errors = non-2xx + socket
-- errors) that bench/bench_daemon.sh parses.
local M = {}
local threads = {}
local rate = tonumber(os.getenv("AF_RATE") or "500")
local conns = tonumber(os.getenv("AF_CONNS") or "2")

function M.setup(thread)
    table.insert(threads, thread)
end

-- wrk calls delay() after each response, so a fixed delay gives a rate of 1/(latency + delay),
-- below the target. Each thread (one connection) corrects its delay once per second by the rate
-- it achieved in the last second (os.time() is all the clock wrk's Lua has), which converges
-- to the target as long as the server keeps up.
local per_conn = rate / conns
local d = 1000.0 / per_conn
local sec, count = os.time(), 0
function M.delay()
    local now = os.time()
    count = count + 1
    if now ~= sec then
        local achieved = count / (now - sec)
        -- half-step correction: damps the oscillation when latencies vary (mixed load)
        d = math.max(0, math.min(10000, d * (1 + 0.5 * (achieved / per_conn - 1))))
        sec, count = now, 0
    end
    return d
end

bad = 0
function M.response(status, headers, body)
    if status < 200 or status > 299 then
        bad = bad + 1
    end
end

function M.done(name)
    return function(summary, latency, requests)
        local bad_total = 0
        for _, t in ipairs(threads) do
            bad_total = bad_total + (t:get("bad") or 0)
        end
        local e = summary.errors
        local sock = e.connect + e.read + e.write + e.timeout
        local secs = summary.duration / 1e6
        io.write(string.format(
            "WRK %s target_rps=%.0f rps=%.1f requests=%d p50_us=%.0f p99_us=%.0f p999_us=%.0f max_us=%.0f non2xx=%d socket_errors=%d\n",
            name, rate, summary.requests / secs, summary.requests, latency:percentile(50),
            latency:percentile(99), latency:percentile(99.9), latency.max, bad_total, sock))
    end
end

return M
