-- POST a server-mode lead (or its bare write) per request, each on a customer of its own: a lead moves its
-- customer from `click` to `lead` once, so no click id is sent twice.
-- Script arguments:
--   1 run prefix: sent as session_id (the run's leads are counted by it afterwards) and in every customer_key
--   2 number of wrk threads T: thread t sends the click ids t, t + T, t + 2T... of the pool, so threads never
--     share a customer
--   3 path of the pool: a file of click ids of customers at `click`, one a line
-- When a thread has used its share of the pool it starts over: those leads answer 400, and the harness refuses
-- the run (it sizes the pool so this does not happen).
-- The Authorization header (the program's key) comes from wrk's -H option.
local threads = 0

function setup(thread)
   threads = threads + 1
   thread:set("thread_id", threads)
end

local prefix, stride
local click_ids = {}
local counter = 0

function init(args)
   prefix = args[1]
   stride = tonumber(args[2])
   local pool = io.open(args[3], "r")
   if pool == nil then
      error("lead.lua: cannot open the pool " .. args[3])
   end
   for line in pool:lines() do
      if line ~= "" then
         click_ids[#click_ids + 1] = line
      end
   end
   pool:close()
   if #click_ids < stride then
      error("lead.lua: fewer click ids than threads")
   end
   wrk.method = "POST"
   wrk.headers["Content-Type"] = "application/json"
end

function request()
   local slots = math.floor(#click_ids / stride)
   local click_id = click_ids[(counter % slots) * stride + thread_id]
   counter = counter + 1
   local body = string.format(
      '{"click_id": "%s", "customer_key": "%s-%d-%d", "session_id": "%s", '
         .. '"page_url": "https://shop.example.com/signup/done"}',
      click_id, prefix, thread_id, counter, prefix
   )
   return wrk.format(nil, nil, nil, body)
end
