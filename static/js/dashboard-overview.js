/* Program overview: the funnel (clicks -> leads -> sales -> revenue) for a date range, from
   GET /api/tracking/performance/<id>?dateFrom=&dateTo=, drawn with the vendored Chart.js. */
(function () {
  "use strict";
  const { api, el, formatNumber, formatAmount, formatPercent, formatTime, isoDay, setStatus } = window.svcDash;
  const root = document.getElementById("overview");
  if (!root) return;
  const form = document.getElementById("range-form");
  const fromInput = document.getElementById("range-from");
  const toInput = document.getElementById("range-to");
  const status = document.getElementById("overview-status");
  const canvas = document.getElementById("funnel-chart");
  const tableBody = document.getElementById("funnel-table");
  const caption = document.getElementById("funnel-caption");
  // Each at least 3:1 against the white chart (WCAG 1.4.11): the revenue bars are opaque, not a light tint.
  const COLORS = { clicks: "#3451d1", leads: "#0e9384", sales: "#dc6803", revenue: "#8e6ae6" };
  const reducedMotion = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  let chart = null;
  let loading = 0;

  function chartConfig(days) {
    const series = (key) => days.map((day) => Number(day[key]) || 0);
    const line = (label, key, color) => ({
      type: "line",
      label,
      data: series(key),
      borderColor: color,
      backgroundColor: color,
      borderWidth: 2,
      pointRadius: days.length > 45 ? 0 : 2,
      cubicInterpolationMode: "monotone",
      yAxisID: "y",
      order: 1,
    });
    return {
      type: "bar",
      data: {
        labels: days.map((day) => day.date),
        datasets: [
          line("Clicks", "clicks", COLORS.clicks),
          line("Leads", "leads", COLORS.leads),
          line("Sales", "sales", COLORS.sales),
          {
            type: "bar",
            label: "Revenue",
            data: days.map((day) => (Number(day.revenue_cents) || 0) / 100),
            backgroundColor: COLORS.revenue,
            borderRadius: 3,
            yAxisID: "revenue",
            order: 2,
          },
        ],
      },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: reducedMotion ? false : { duration: 250 },
        interaction: { mode: "index", intersect: false },
        plugins: {
          legend: { position: "bottom", labels: { boxWidth: 12, usePointStyle: true } },
          tooltip: {
            callbacks: {
              label: (item) =>
                item.dataset.yAxisID === "revenue"
                  ? `Revenue: ${formatAmount(Math.round(item.parsed.y * 100))}`
                  : `${item.dataset.label}: ${formatNumber(item.parsed.y)}`,
            },
          },
        },
        scales: {
          x: { grid: { display: false }, ticks: { maxRotation: 0, autoSkip: true, maxTicksLimit: 8 } },
          y: { beginAtZero: true, position: "left", ticks: { precision: 0 }, title: { display: true, text: "Events" } },
          revenue: {
            beginAtZero: true,
            position: "right",
            grid: { drawOnChartArea: false },
            title: { display: true, text: "Revenue" },
          },
        },
      },
    };
  }

  function renderTotals(totals) {
    for (const node of root.querySelectorAll("[data-total]")) {
      const key = node.dataset.total;
      node.textContent = key.endsWith("_cents") ? formatAmount(totals[key]) : formatNumber(totals[key]);
    }
    const leadRate = formatPercent(totals.leads, totals.clicks);
    const saleRate = formatPercent(totals.sales, totals.leads);
    root.querySelector('[data-rate="leads"]').textContent = leadRate ? `${leadRate} of clicks` : "";
    root.querySelector('[data-rate="sales"]').textContent = saleRate ? `${saleRate} of leads` : "";
  }

  function renderTable(days) {
    tableBody.replaceChildren(
      ...days.map((day) =>
        el(
          "tr",
          {},
          el("td", {}, day.date),
          el("td", { className: "num" }, formatNumber(day.clicks)),
          el("td", { className: "num" }, formatNumber(day.leads)),
          el("td", { className: "num" }, formatNumber(day.sales)),
          el("td", { className: "num" }, formatAmount(day.revenue_cents)),
          el("td", { className: "num" }, formatAmount(day.commission_cents)),
        ),
      ),
    );
  }

  function renderChart(days) {
    const config = chartConfig(days);
    if (chart) {
      chart.data = config.data;
      chart.update();
    } else {
      chart = new window.Chart(canvas, config);
    }
  }

  function markPresets() {
    const days = Math.round((new Date(toInput.value) - new Date(fromInput.value)) / 86400000) + 1;
    const today = isoDay(new Date());
    for (const chip of root.querySelectorAll("[data-days]")) {
      chip.setAttribute("aria-pressed", String(toInput.value === today && Number(chip.dataset.days) === days));
    }
  }

  async function load() {
    const from = fromInput.value;
    const to = toInput.value;
    if (!from || !to || from > to) {
      setStatus(status, "Choose a start date on or before the end date.", true);
      return;
    }
    markPresets();
    const ticket = ++loading;
    root.dataset.state = "loading";
    setStatus(status, "Loading…");
    const query = new URLSearchParams({ dateFrom: from, dateTo: to });
    try {
      const body = await api(`${root.dataset.performanceUrl}?${query}`);
      if (ticket !== loading) return; // a newer range was asked for meanwhile
      const data = body.data;
      const days = data.by_day || [];
      renderTotals(data.totals || {});
      renderTable(days);
      caption.textContent = `Clicks, leads, sales, revenue and commission per day, ${from} to ${to} (UTC): the chart's data`;
      renderChart(days);
      const empty = days.every((day) => !Number(day.clicks) && !Number(day.leads) && !Number(day.sales));
      setStatus(status, empty ? "No live events in this range yet." : "");
      history.replaceState(null, "", `?${new URLSearchParams({ from, to })}`);
      root.dataset.state = "ready";
    } catch (error) {
      if (ticket !== loading) return;
      setStatus(status, error.message, true);
      root.dataset.state = "error";
    }
  }

  // The latest live click, lead and sale from GET /api/tracking/status/<id>; a failure leaves a dash.
  async function loadLastEvents() {
    const box = document.getElementById("last-events");
    if (!box) return;
    let last = {};
    try {
      last = (await api(box.dataset.statusUrl)).data.last_event_at || {};
    } catch (error) {
      last = null;
    }
    for (const node of box.querySelectorAll("[data-last]")) {
      node.textContent = last ? formatTime(last[node.dataset.last]).slice(0, 16) || "never" : "–";
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    load();
  });
  for (const chip of root.querySelectorAll("[data-days]")) {
    chip.addEventListener("click", () => {
      const end = new Date();
      const start = new Date(end.getTime() - (Number(chip.dataset.days) - 1) * 86400000);
      fromInput.value = isoDay(start);
      toInput.value = isoDay(end);
      load();
    });
  }
  loadLastEvents();
  if (!window.Chart) {
    setStatus(status, "The chart library did not load; reload the page.", true);
    return;
  }
  load();
})();
