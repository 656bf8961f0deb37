/* svc-tracker.js: a program's clicks, visits and signups (README) */
(function () {
  "use strict";
  if (window.svc && window.svc.ready) return; // included twice
  var script = document.currentScript || document.querySelector("script[data-svc-program-id]");
  var attr = function (name) { return (script && script.getAttribute("data-svc-" + name)) || ""; };
  var programId = attr("program-id");
  var pid = /^\d+$/.test(programId) ? Number(programId) : programId;
  // /_svc/js/svc-tracker.js calls /_svc: the server sets a first-party cookie
  var apiBase = (attr("api-base") || (script ? script.src : "")).replace(/(\/(static\/)?js\/[^/]*)?\/*$/, "");
  var testMode = attr("test-mode") === "true";
  var noop = function () {};
  var cut = function (value, length) { return String(value || "").slice(0, length); };

  // May throw (privacy modes).
  function session(key, value) {
    try {
      if (value === undefined) return sessionStorage.getItem(key);
      sessionStorage.setItem(key, value);
    } catch (e) {}
    return value;
  }

  function getClickId() {
    var match = document.cookie.match(/(?:^|;\s*)svc_click_id=([^;]*)/);
    return match ? decodeURIComponent(match[1]) : null;
  }

  // Nothing is sent while prerendered.
  var shown = new Promise(function (done) {
    document.prerendering ? document.addEventListener("prerenderingchange", done) : done();
  });

  // POSTs answer their JSON, errors too; a failed GET {}.
  function call(path, body, keepalive) {
    var init = body && { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
      keepalive: keepalive };
    return shown.then(function () { return fetch(apiBase + path, init); }).then(function (response) {
      return response.json().then(function (json) { return response.ok || body ? json : {}; });
    });
  }

  function pageBody(extra) {
    var body = { program_id: pid, page_url: cut(location.href, 4096), page_title: cut(document.title, 1024),
      referrer_url: cut(document.referrer, 4096), session_id: sessionId, additional_data: { program_id: pid } };
    if (testMode) body.additional_data.test_mode = true;
    return Object.assign(body, extra);
  }

  // Stripe reads client_reference_id when metadata has no click id.
  function decorate() {
    var clickId = getClickId();
    if (!clickId) return;
    document.querySelectorAll('a[href^="https://buy.stripe.com/"]').forEach(function (link) {
      var url = new URL(link.href);
      if (url.searchParams.get("client_reference_id") === clickId) return;
      url.searchParams.set("client_reference_id", clickId);
      link.href = url;
    });
    document.querySelectorAll("stripe-buy-button,stripe-pricing-table").forEach(function (element) {
      if (element.getAttribute("client-reference-id") !== clickId) element.setAttribute("client-reference-id", clickId);
    });
  }

  // Asked once per tab session.
  function loadConfig() {
    var key = "svc_config_" + programId;
    try {
      var cached = JSON.parse(session(key));
      if (cached) return Promise.resolve(cached);
    } catch (e) {}
    return call("/api/v1/track/config?program_id=" + encodeURIComponent(programId)).then(function (config) {
      if (config.success) session(key, JSON.stringify(config));
      return config;
    });
  }

  var sessionId = session("svc_session_id") ||
    session("svc_session_id", window.crypto && crypto.randomUUID ? crypto.randomUUID() : String(Math.random()).slice(2));
  var params = new URLSearchParams(location.search);
  var code = params.get("aff") || params.get("via"); // aff wins, then via, then an alias (config)
  var config = Promise.resolve({});
  var clicked = config;

  if (!programId) console.warn("svc-tracker: data-svc-program-id is missing");
  else {
    config = loadConfig().catch(function () { return {}; });
    clicked = (code || !location.search ? Promise.resolve(code) : config.then(function (c) {
      return (c.link_aliases || []).some(params.get, params);
    })).then(function (found) {
      if (!found) return;
      var timezone = "";
      try { timezone = Intl.DateTimeFormat().resolvedOptions().timeZone; } catch (e) {}
      var click = call("/api/v1/track/click", pageBody({
        affiliate_url: cut(location.href, 4096),
        screen_resolution: screen.width + "x" + screen.height,
        viewport_size: innerWidth + "x" + innerHeight,
        language: cut(navigator.language, 35),
        timezone: cut(timezone, 64),
        existing_click_id: getClickId() || "",
      }));
      return Promise.all([click, config]).then(function (a) {
        var clickId = a[0].click_id || (a[0].data && a[0].data.click_id); // test mode: in data
        var days = a[0].cookie_window_days || a[1].cookie_window_days || 30;
        if (clickId && (getClickId() !== clickId || apiBase.indexOf(location.origin))) {
          document.cookie = "svc_click_id=" + encodeURIComponent(clickId) + "; Max-Age=" + days * 86400 +
            "; Path=/; SameSite=Lax" + (location.protocol === "https:" ? "; Secure" : "");
        }
      });
    }).catch(noop);
    clicked.then(function () {
      return call("/api/v1/track/visit", pageBody({ click_id: getClickId() || "" }), true);
    }).catch(noop);
  }

  var ready = Promise.all([clicked, config]).then(function (a) {
    if (a[1].decorate_payment_links) {
      decorate();
      // and later additions
      new MutationObserver(decorate).observe(document.documentElement,
        { childList: true, subtree: true, attributeFilter: ["href"] });
    }
    return getClickId();
  });

  window.svc = {
    ready: ready,
    getClickId: getClickId,
    // No click id: no call.
    signup: function (customerKey, email) {
      return ready.then(function () {
        var clickId = getClickId();
        if (!clickId || !programId) return { success: false, skipped: true, message: "No svc_click_id" };
        var body = pageBody({ click_id: clickId, email: email ? String(email) : "" });
        if (customerKey != null) body.customer_key = String(customerKey);
        return call("/api/v1/track/lead", body);
      });
    },
    // The visitor's partner's discount, or null: asked only when the page calls this.
    getDiscount: function () {
      return ready.then(function () {
        var clickId = getClickId();
        return clickId && programId ? call("/api/v1/track/discount?program_id=" + encodeURIComponent(programId) +
          "&click_id=" + encodeURIComponent(clickId)).then(function (a) { return a.discount || null; }) : null;
      }).catch(function () { return null; });
    },
  };
})();
