/* Events: GET /api/tracking/events/<id>?page&pageSize&eventType&dateFrom&dateTo, newest first, with type and date
   filters and pagination. The filters live in the address bar (?type=&from=&to=&page=) so a view can be shared. */
(function () {
  "use strict";
  const { api, el, formatAmount, formatNumber, formatTime, setStatus } = window.svcDash;
  const root = document.getElementById("events");
  if (!root) return;
  const form = document.getElementById("events-filter");
  const typeInput = document.getElementById("events-type");
  const fromInput = document.getElementById("events-from");
  const toInput = document.getElementById("events-to");
  const rows = document.getElementById("events-rows");
  const status = document.getElementById("events-status");
  const prev = document.getElementById("events-prev");
  const next = document.getElementById("events-next");
  const pageInfo = document.getElementById("events-page-info");
  const pageSize = Number(root.dataset.pageSize) || 25;
  const LABELS = { click: "click", lead: "lead", conversion: "sale" };
  const explainUrl = root.dataset.explainUrl;
  let page = Number(root.dataset.page) || 1;
  let pageCount = 0;
  let loading = 0;

  function field(label, value) {
    if (value === undefined || value === null || value === "") return null;
    return el("span", {}, el("b", {}, label), String(value));
  }

  function details(event) {
    if (event.event_type === "click") {
      const place = [event.geo_city, event.geo_country].filter(Boolean).join(", ");
      const device = [event.device_type, event.browser_name].filter(Boolean).join(" · ");
      return [
        field("page", event.page_url),
        field("from", event.referrer_url),
        field("where", place),
        field("device", device),
      ];
    }
    if (event.event_type === "lead") return [field("customer", event.customer_key)];
    return [
      field("amount", formatAmount(event.amount_cents, event.currency || "USD")),
      field("transaction", event.processor_event_id),
    ];
  }

  // "Why?": how the sale was attributed (by its transaction id), or the customer's story (by its click id).
  function explainLink(event) {
    if (!explainUrl) return null;
    const params = new URLSearchParams();
    if (event.event_type === "conversion" && event.processor_event_id) params.set("transaction_id", event.processor_event_id);
    else if (event.click_id) params.set("click_id", event.click_id);
    else return null;
    return el("a", { href: `${explainUrl}?${params}`, className: "explain-link" }, "Why?");
  }

  function row(event) {
    const type = event.event_type;
    return el(
      "tr",
      { dataset: { eventType: type, eventId: event.id } },
      el("td", { "data-label": "Type" }, el("span", { className: `badge type-${type}` }, LABELS[type] || type)),
      el("td", { "data-label": "Time", title: event.timestamp }, formatTime(event.timestamp)),
      el("td", { "data-label": "Click id" }, event.click_id ? el("code", {}, event.click_id) : "–"),
      el(
        "td",
        { className: "details-cell" },
        el("div", { className: "details" }, [...details(event), explainLink(event)].filter(Boolean)),
      ),
    );
  }

  // Whole UTC days: the API bounds are inclusive ISO 8601 times.
  function query() {
    const params = new URLSearchParams({ page: String(page), pageSize: String(pageSize) });
    if (typeInput.value) params.set("eventType", typeInput.value);
    if (fromInput.value) params.set("dateFrom", `${fromInput.value}T00:00:00Z`);
    if (toInput.value) params.set("dateTo", `${toInput.value}T23:59:59.999Z`);
    return params;
  }

  function remember() {
    const params = new URLSearchParams();
    if (typeInput.value) params.set("type", typeInput.value);
    if (fromInput.value) params.set("from", fromInput.value);
    if (toInput.value) params.set("to", toInput.value);
    if (page > 1) params.set("page", String(page));
    const search = params.toString();
    history.replaceState(null, "", search ? `?${search}` : window.location.pathname);
  }

  async function load() {
    if (fromInput.value && toInput.value && fromInput.value > toInput.value) {
      setStatus(status, "Choose a start date on or before the end date.", true);
      return;
    }
    const ticket = ++loading;
    root.dataset.state = "loading";
    prev.disabled = next.disabled = true;
    setStatus(status, "Loading…");
    try {
      const body = await api(`${root.dataset.eventsUrl}?${query()}`);
      if (ticket !== loading) return;
      const events = body.data || [];
      const pagination = (body.meta && body.meta.pagination) || {};
      pageCount = Number(pagination.pageCount) || 0;
      rows.replaceChildren(...events.map(row));
      const total = Number(pagination.total) || 0;
      pageInfo.textContent = total
        ? `Page ${page} of ${Math.max(pageCount, 1)} · ${formatNumber(total)} event${total === 1 ? "" : "s"}`
        : "";
      if (!events.length) {
        setStatus(status, total ? "No events on this page." : "No events match these filters.");
      } else {
        setStatus(status, "");
      }
      prev.disabled = page <= 1;
      next.disabled = page >= pageCount;
      remember();
      root.dataset.state = "ready";
    } catch (error) {
      if (ticket !== loading) return;
      setStatus(status, error.message, true);
      prev.disabled = page <= 1;
      root.dataset.state = "error";
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    page = 1;
    load();
  });
  typeInput.addEventListener("change", () => {
    page = 1;
    load();
  });
  prev.addEventListener("click", () => {
    page = Math.max(1, page - 1);
    load();
  });
  next.addEventListener("click", () => {
    page += 1;
    load();
  });
  load();
})();
