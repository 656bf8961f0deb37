"""The click's device comes from ua-parser 1.0's compiled resolver, classified by user_agents: the same answer
user_agents' own (pure-Python) parse gives, at a small fraction of its cost."""

from typing import Any

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


def _classes(parsed: user_agents.parsers.UserAgent) -> tuple[Any, ...]:
    return (parsed.is_bot, parsed.is_tablet, parsed.is_mobile, parsed.is_pc, parsed.os, parsed.browser, parsed.device)


@pytest.mark.parametrize("user_agent", BROWSERS + CRAWLERS_AND_CLIENTS)
def test_the_resolver_classifies_as_user_agents_own_parse(user_agent):
    assert _classes(_ResolvedUserAgent(user_agent)) == _classes(user_agents.parse(user_agent))


def test_a_browser_build_never_seen_before_is_still_that_browser():
    device = device_for_user_agent(BROWSERS[0].replace("124.0.0.0", "124.0.98765.4321"))
    assert (device.device_type, device.device_os, device.browser_name) == ("desktop", "Windows", "Chrome")


def test_a_crawler_is_a_bot():
    assert device_for_user_agent(CRAWLERS_AND_CLIENTS[0]).device_type == BOT_DEVICE


# Crawlers that pose as phones (issue 37): ua-parser names each, but for Bytespider its generic-phone rule comes
# before its catch-all spider rule, so the parse said "Generic Smartphone" and the click counted as a mobile visitor.
CRAWLERS_POSING_AS_PHONES = {
    "Bytespider": "Mozilla/5.0 (Linux; Android 5.0) AppleWebKit/537.36 (KHTML, like Gecko) Mobile Safari/537.36 "
    "(compatible; Bytespider; spider-feedback@bytedance.com)",
    "Googlebot smartphone": "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, "
    "like Gecko) Chrome/126.0.6478.126 Mobile Safari/537.36 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "bingbot mobile": "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like "
    "Gecko) Chrome/116.0.1938.76 Mobile Safari/537.36 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
    "Applebot": "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.0 Mobile/15E148 Safari/604.1 (Applebot/0.1; +http://www.apple.com/go/applebot)",
    "PetalBot": "Mozilla/5.0 (Linux; Android 7.0;) AppleWebKit/537.36 (KHTML, like Gecko) Mobile Safari/537.36 "
    "(compatible; PetalBot;+https://webmaster.petalsearch.com/site/petalbot)",
    "YandexMobileBot": "Mozilla/5.0 (iPhone; CPU iPhone OS 8_1 like Mac OS X) AppleWebKit/600.1.4 (KHTML, like Gecko) "
    "Version/8.0 Mobile/12B411 Safari/600.1.4 (compatible; YandexMobileBot/3.0; +http://yandex.com/bots)",
    "Amazonbot": "Mozilla/5.0 (iPhone; CPU iPhone OS 8_3 like Mac OS X) AppleWebKit/600.1.4 (KHTML, like Gecko) "
    "Version/8.0 Mobile/12F70 Safari/600.1.4 (compatible; Amazonbot/0.1; +https://developer.amazon.com/support/amazonbot)",
    "Baiduspider mobile": "Mozilla/5.0 (Linux;u;Android 4.2.2;zh-cn;) AppleWebKit/534.46 (KHTML,like Gecko) "
    "Version/5.1 Mobile Safari/10600.6.3 (compatible; Baiduspider/2.0; +http://www.baidu.com/search/spider.html)",
    "AdsBot-Google-Mobile": "Mozilla/5.0 (iPhone; CPU iPhone OS 14_7_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, "
    "like Gecko) Version/14.1.2 Mobile/15E148 Safari/604.1 (compatible; AdsBot-Google-Mobile; "
    "+http://www.google.com/mobile/adsbot.html)",
    "GPTBot": "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)",
    "ClaudeBot": "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; "
    "+claudebot@anthropic.com)",
}
# Phones on a device ua-parser cannot name ("Generic Smartphone"), in apps whose tokens ua-parser's catch-all spider
# rule would take for a crawler's (Sogou, Yahoo, Daum): their browser is a WebView, not a spider, so they stay phones.
PHONES_ON_GENERIC_DEVICES = [
    "Mozilla/5.0 (Android 14; Mobile; rv:127.0) Gecko/127.0 Firefox/127.0",
    "Mozilla/5.0 (Linux; Android 10; K; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/120.0.0.0 Mobile "
    "Safari/537.36 SogouMSE,SogouMobileBrowser/5.30",
    "Mozilla/5.0 (Linux; Android 10; K; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/120.0.0.0 Mobile "
    "Safari/537.36 YJApp-ANDROID jp.co.yahoo.android.yjtop/4.0",
    "Mozilla/5.0 (Linux; Android 10; K; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/120.0.0.0 Mobile "
    "Safari/537.36 DaumApps/6.9.0",
    "Mozilla/5.0 (Linux; Android 10; K; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/120.0.0.0 Mobile "
    "Safari/537.36 trill_340000 AppName/musical_ly ByteLocale/en BytedanceWebview/d8a21c6",
]


@pytest.mark.parametrize("user_agent", CRAWLERS_POSING_AS_PHONES.values(), ids=CRAWLERS_POSING_AS_PHONES.keys())
def test_a_crawler_posing_as_a_phone_is_a_bot(user_agent):
    assert device_for_user_agent(user_agent).device_type == BOT_DEVICE


@pytest.mark.parametrize("user_agent", PHONES_ON_GENERIC_DEVICES)
def test_a_phone_ua_parser_cannot_name_stays_a_phone(user_agent):
    assert device_for_user_agent(user_agent).device_type == "mobile"


def test_a_kindle_stays_a_tablet():
    # Amazon Silk is a name ua-parser's catch-all spider rule matches ("silk"), but its device is a Kindle.
    kindle = (
        "Mozilla/5.0 (Linux; Android 9; KFTRWI) AppleWebKit/537.36 (KHTML, like Gecko) Silk/126.1.1 like "
        "Chrome/126.0.0.0 Safari/537.36"
    )
    assert device_for_user_agent(kindle).device_type == "tablet"
