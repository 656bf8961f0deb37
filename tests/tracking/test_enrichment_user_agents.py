"""The click's device comes from ua-parser 1.0's compiled resolver, classified by user_agents: the same answer
user_agents' own (pure-Python) parse gives, at a small fraction of its cost."""

import pytest
import user_agents

from tracking.enrichment import BOT_DEVICE, _ResolvedUserAgent, device_for_user_agent

BROWSERS = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4.1 "
    "Safari/605.1.15",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4.1 "
    "Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (iPad; CPU OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 "
    "Safari/604.1",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.6367.82 Mobile "
    "Safari/537.36",
    "Mozilla/5.0 (Linux; Android 9; SM-T820) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:125.0) Gecko/20100101 Firefox/125.0",
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 "
    "Edg/124.0.2478.80",
    "Mozilla/5.0 (Linux; Android 14; SM-A546B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/24.0 "
    "Chrome/117.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (PlayStation 5 3.11) AppleWebKit/605.1.15 (KHTML, like Gecko)",
    "Opera/9.80 (J2ME/MIDP; Opera Mini/9.80 (S60; SymbOS; Opera Mobi/23.348; U; en) Presto/2.5.25 Version/10.54",
]
CRAWLERS_AND_CLIENTS = [
    "Googlebot/2.1 (+http://www.google.com/bot.html)",
    "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
    "facebookexternalhit/1.1",
    "Slackbot-LinkExpanding 1.0",
    "curl/8.5.0",
    "python-requests/2.31.0",
    "Java/17.0.2",
    "x",
]


def _classes(parsed: user_agents.parsers.UserAgent) -> tuple:
    return (parsed.is_bot, parsed.is_tablet, parsed.is_mobile, parsed.is_pc, parsed.os, parsed.browser, parsed.device)


@pytest.mark.parametrize("user_agent", BROWSERS + CRAWLERS_AND_CLIENTS)
def test_the_resolver_classifies_as_user_agents_own_parse(user_agent):
    assert _classes(_ResolvedUserAgent(user_agent)) == _classes(user_agents.parse(user_agent))


def test_a_browser_build_never_seen_before_is_still_that_browser():
    device = device_for_user_agent(BROWSERS[0].replace("124.0.0.0", "124.0.98765.4321"))
    assert (device.device_type, device.device_os, device.browser_name) == ("desktop", "Windows", "Chrome")


def test_a_crawler_is_a_bot():
    assert device_for_user_agent(CRAWLERS_AND_CLIENTS[0]).device_type == BOT_DEVICE
