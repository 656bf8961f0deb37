/* Dashboard helpers shared by the page scripts (window.svcDash): JSON calls to the dashboard API with the
   session and CSRF token, safe DOM building, number/date formatting, copy buttons. No dependencies. */
(function () {
  "use strict";

  function cookie(name) {
    const prefix = name + "=";
    for (const part of document.cookie.split(";")) {
      const item = part.trim();
      if (item.startsWith(prefix)) return decodeURIComponent(item.slice(prefix.length));
    }
    return "";
  }

  function csrfToken() {
    // Django's csrftoken cookie; every signed-in page also carries the token in the sign-out form.
    const input = document.querySelector("input[name=csrfmiddlewaretoken]");
    return cookie("csrftoken") || (input ? input.value : "");
  }

  class ApiError extends Error {
    constructor(message, status) {
      super(message);
      this.status = status;
    }
  }

  /* GET (or POST with a JSON body) one dashboard API route; resolves with the parsed body, rejects with an
     ApiError whose message is the service's error.message or a plain explanation. */
  async function api(url, { method = "GET", body } = {}) {
    const init = { method, credentials: "same-origin", headers: { Accept: "application/json" } };
    if (method !== "GET") {
      init.headers["Content-Type"] = "application/json";
      init.headers["X-CSRFToken"] = csrfToken();
      init.body = JSON.stringify(body || {});
    }
    let response;
    try {
      response = await fetch(url, init);
    } catch (error) {
      throw new ApiError("The server could not be reached. Check your connection and try again.", 0);
    }
    let payload = null;
    try {
      payload = await response.json();
    } catch (error) {
      payload = null;
    }
    if (response.ok && payload) return payload;
    if (response.status === 401) throw new ApiError("Your session has ended: reload the page and sign in again.", 401);
    const message = payload && payload.error && payload.error.message;
    throw new ApiError(message || `The server answered ${response.status}. Try again shortly.`, response.status);
  }

  /* el("td", {className: "num", title: "x"}, "text", otherNode): text is always set as text, never as HTML. */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "className") node.className = value;
      else if (key === "dataset") Object.assign(node.dataset, value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === undefined || child === null || child === "") continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  const numberFormat = new Intl.NumberFormat("en-US");
  const amountFormat = new Intl.NumberFormat("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  const ZERO_DECIMAL = new Set(["VND"]);

  function formatNumber(value) {
    return numberFormat.format(Number(value) || 0);
  }

  /* Smallest currency unit -> major units: 12345 -> "123.45", (5000, "VND") -> "5,000 VND". */
  function formatAmount(cents, currency) {
    const value = Number(cents) || 0;
    if (currency && ZERO_DECIMAL.has(currency)) return `${numberFormat.format(value)} ${currency}`;
    const text = amountFormat.format(value / 100);
    return currency ? `${text} ${currency}` : text;
  }

  function formatPercent(part, whole) {
    if (!whole) return "";
    return `${((100 * part) / whole).toFixed(1)}%`;
  }

  /* ISO time -> "2026-01-31 14:05:09" in UTC, like every server-rendered time in the dashboard. */
  function formatTime(iso) {
    if (!iso) return "";
    const time = new Date(iso);
    if (Number.isNaN(time.getTime())) return String(iso);
    return time.toISOString().slice(0, 19).replace("T", " ");
  }

  function isoDay(date) {
    return date.toISOString().slice(0, 10);
  }

  function setStatus(node, message, isError) {
    if (!node) return;
    node.textContent = message || "";
    node.classList.toggle("error", Boolean(isError));
  }

  async function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      try {
        await navigator.clipboard.writeText(text);
        return true;
      } catch (error) {
        /* fall through to the selection copy */
      }
    }
    const area = el("textarea", { readonly: true, style: "position:fixed;top:-1000px;opacity:0" });
    area.value = text;
    document.body.append(area);
    area.select();
    let copied = false;
    try {
      copied = document.execCommand("copy");
    } catch (error) {
      copied = false;
    }
    area.remove();
    return copied;
  }

  // Copy buttons: <button class="copy" data-copy-target="#id"> copies that element's text.
  document.addEventListener("click", async (event) => {
    const button = event.target.closest("[data-copy-target]");
    if (!button) return;
    const source = document.querySelector(button.dataset.copyTarget);
    if (!source) return;
    const copied = await copyText(source.textContent);
    const label = button.dataset.label || button.textContent;
    button.dataset.label = label;
    button.textContent = copied ? "Copied" : "Select and copy";
    button.classList.toggle("copied", copied);
    if (!copied) window.getSelection().selectAllChildren(source);
    setTimeout(() => {
      button.textContent = label;
      button.classList.remove("copied");
    }, 2000);
  });

  // <select data-autosubmit> submits its form on change (the commission status filter).
  document.addEventListener("change", (event) => {
    if (event.target.matches("select[data-autosubmit]") && event.target.form) event.target.form.submit();
  });

  window.svcDash = {
    api,
    ApiError,
    el,
    formatNumber,
    formatAmount,
    formatPercent,
    formatTime,
    isoDay,
    setStatus,
    copyText,
  };
})();
