-- POST a click (or its bare write) per request as real traffic sends them: new visitors, each with an address
-- of their own (X-Forwarded-For, read through TRUSTED_PROXY_COUNT=1), spread over many links.
-- Script arguments:
--   1 run prefix (sent as session_id: the run's rows are counted by it afterwards)
--   2 run number: part of every address, so no two runs (a warm-up and its measured run) share a visitor
--   3 user agents: "pool" (20 common browsers) or "unique" (a browser version never seen before per request)
--   4 links: "spread" (every link in turn, a long tail) or "hot" (the first link only)
--   5 repeat share in percent (0-100): that share of requests comes from a returning visitor, who sends the
--     click id of their cookie (existing_click_id) with their own address, browser and link
--   6 number of link codes N, then N codes, then the returning visitors as "click_id|ip|ua index|link index"
local threads = 0

function setup(thread)
   threads = threads + 1
   thread:set("thread_id", threads)
end

local USER_AGENTS = {
   "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
   "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/125.0.0.0 Safari/537.36",
   "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
   "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4.1 Safari/605.1.15",
   "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4.1 Mobile/15E148 Safari/604.1",
   "Mozilla/5.0 (iPhone; CPU iPhone OS 16_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/16.6 Mobile/15E148 Safari/604.1",
   "Mozilla/5.0 (iPad; CPU OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1",
   "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.6367.82 Mobile Safari/537.36",
   "Mozilla/5.0 (Linux; Android 13; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/123.0.6312.118 Mobile Safari/537.36",
   "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36",
   "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:125.0) Gecko/20100101 Firefox/125.0",
   "Mozilla/5.0 (Macintosh; Intel Mac OS X 14.4; rv:125.0) Gecko/20100101 Firefox/125.0",
   "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0",
   "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
   "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 Edg/124.0.2478.80",
   "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 OPR/109.0.0.0",
   "Mozilla/5.0 (Linux; Android 14; SM-A546B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/24.0 Chrome/117.0.0.0 Mobile Safari/537.36",
   "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/124.0.6367.88 Mobile/15E148 Safari/604.1",
   "Mozilla/5.0 (Windows NT 6.1; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/109.0.0.0 Safari/537.36",
   "Mozilla/5.0 (Linux; Android 12; moto g(60)) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36",
}
-- First octets of public unicast ranges: the geo lookup runs on every new address, as on real traffic.
local FIRST_OCTETS = { 24, 31, 37, 46, 62, 77, 81, 86, 89, 92, 95, 109, 151, 176, 178, 185, 188, 193, 195, 213 }

local prefix, run, unique_agents, hot, repeat_share
local links = {}
local returning = {}
local counter = 0

local function split(text)
   local parts = {}
   for part in string.gmatch(text, "[^|]+") do
      parts[#parts + 1] = part
   end
   return parts
end

function init(args)
   prefix = args[1]
   run = tonumber(args[2])
   unique_agents = args[3] == "unique"
   hot = args[4] == "hot"
   repeat_share = tonumber(args[5])
   local link_count = tonumber(args[6])
   for i = 7, 6 + link_count do
      links[#links + 1] = args[i]
   end
   for i = 7 + link_count, #args do
      local visitor = split(args[i])
      returning[#returning + 1] = {
         click_id = visitor[1],
         ip = visitor[2],
         agent = tonumber(visitor[3]),
         link = tonumber(visitor[4]),
      }
   end
   if #links == 0 then
      error("visitors.lua: no link codes given")
   end
   if repeat_share > 0 and #returning == 0 then
      error("visitors.lua: a repeat share needs returning visitors")
   end
   wrk.method = "POST"
   wrk.headers["Content-Type"] = "application/json"
end

local function body(code, agent, ip, existing_click_id)
   return string.format(
      '{"affiliate_url": "https://shop.example.com/?aff=%s", "page_url": "https://shop.example.com/pricing", '
         .. '"referrer_url": "https://news.example.org/post", "user_agent": "%s", "session_id": "%s", '
         .. '"existing_click_id": "%s"}',
      code, agent, prefix, existing_click_id
   ), { ["Content-Type"] = "application/json", ["X-Forwarded-For"] = ip }
end

function request()
   counter = counter + 1
   if repeat_share > 0 and counter % 100 < repeat_share then
      local visitor = returning[(counter * 31 + thread_id) % #returning + 1]
      local text, headers = body(links[visitor.link], USER_AGENTS[visitor.agent], visitor.ip, visitor.click_id)
      return wrk.format(nil, nil, headers, text)
   end
   local agent = USER_AGENTS[(counter + thread_id) % #USER_AGENTS + 1]
   if unique_agents then
      -- The same browser at a build number nobody sent before: every parse cache misses.
      agent = string.gsub(agent, "(%d+)%.0%.0%.0", "%1.0." .. counter .. "." .. thread_id, 1)
      if not string.find(agent, "%." .. counter .. "%." .. thread_id) then
         agent = agent .. " Build/" .. thread_id .. "." .. counter
      end
   end
   -- One address per request: run and thread, then counter, spread over public first octets.
   local ip = string.format(
      "%d.%d.%d.%d",
      FIRST_OCTETS[(thread_id * 7 + math.floor(counter / 65536)) % #FIRST_OCTETS + 1],
      (run * 4 + thread_id) % 256,
      math.floor(counter / 256) % 256,
      counter % 256
   )
   local code = hot and links[1] or links[(counter * 7919 + thread_id * 104729) % #links + 1]
   local text, headers = body(code, agent, ip, "")
   return wrk.format(nil, nil, headers, text)
end
