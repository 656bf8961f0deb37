/* Readiness: the checklist from GET /api/tracking/readiness/<id>, and "Run verification"
   (POST /api/tracking/run-verification/<id>, shown only to roles with tracking:test). */
(function () {
  "use strict";
  const { api, el, formatNumber, formatTime, setStatus } = window.svcDash;
  const root = document.getElementById("readiness");
  if (!root) return;
  const verdict = document.getElementById("readiness-verdict");
  const checks = document.getElementById("readiness-checks");
  const status = document.getElementById("readiness-status");
  const mistakesSection = document.getElementById("readiness-mistakes-section");
  const mistakes = document.getElementById("readiness-mistakes");
  const runButton = document.getElementById("run-verification");
  const result = document.getElementById("verification-result");
  const ICONS = { pass: "✓", warn: "!", fail: "✕" };
  const VERDICTS = {
    ready: "Ready: everything checks out.",
    ready_with_warnings: "Ready, with warnings.",
    incomplete: "Not ready yet.",
  };
  const COUNT_LABELS = {
    clicks: "clicks",
    leads: "leads",
    sales: "sales",
    attributed_sales: "attributed sales",
    test_clicks: "test clicks",
    test_leads: "test leads",
    test_sales: "test sales",
  };

  function renderVerdict(data) {
    const counts = Object.entries(data.counts || {}).map(([key, value]) =>
      el("span", {}, `${formatNumber(value)} ${COUNT_LABELS[key] || key.replaceAll("_", " ")}`),
    );
    verdict.className = `verdict ${data.status || ""}`;
    verdict.replaceChildren(
      el("strong", {}, VERDICTS[data.status] || (data.ready ? "Ready." : "Not ready yet.")),
      data.next_step ? el("p", {}, el("b", {}, "Next step: "), data.next_step) : null,
      counts.length ? el("div", { className: "counts" }, counts) : null,
    );
    verdict.hidden = false;
  }

  function renderChecks(items) {
    checks.replaceChildren(
      ...items.map((check) =>
        el(
          "li",
          { className: check.status, dataset: { checkId: check.id, status: check.status } },
          el("span", { className: "icon", role: "img", "aria-label": check.status, title: check.status }, ICONS[check.status] || "?"),
          el(
            "div",
            {},
            el("span", { className: "title" }, check.title),
            " ",
            el("span", { className: `badge ${check.status}` }, check.status),
            el("div", { className: "detail" }, check.detail),
          ),
          check.next_step ? el("div", { className: "next" }, el("b", {}, "Next step: "), check.next_step) : null,
        ),
      ),
    );
  }

  // What recent calls got wrong (tracking.diagnosis): how often, when last, and the fix.
  function renderMistakes(items) {
    mistakes.replaceChildren(
      ...items.map((mistake) =>
        el(
          "li",
          // A mistake that lost something (severity "fail") shows as a failure.
          { className: mistake.severity || "warn", dataset: { mistakeCode: mistake.code, severity: mistake.severity || "warn" } },
          el(
            "span",
            { className: "icon", role: "img", "aria-label": `mistake (${mistake.severity || "warn"})`, title: "mistake" },
            ICONS[mistake.severity] || ICONS.warn,
          ),
          el(
            "div",
            {},
            el("span", { className: "title" }, mistake.title),
            " ",
            el("span", { className: `badge ${mistake.severity || "warn"}` }, `${formatNumber(mistake.count)}×`),
            el(
              "div",
              { className: "detail" },
              // In UTC to the second, as every time on the dashboard reads (formatTime).
              `${mistake.code}, last ${mistake.last_seen_at ? `${formatTime(mistake.last_seen_at)} UTC` : "?"}`,
            ),
          ),
          el(
            "div",
            { className: "next" },
            el("b", {}, "Fix: "),
            mistake.fix,
            mistake.docs ? [" ", el("a", { href: mistake.docs }, "Docs")] : null,
          ),
        ),
      ),
    );
    mistakesSection.hidden = items.length === 0;
  }

  async function load() {
    root.dataset.state = "loading";
    setStatus(status, "Checking…");
    try {
      const body = await api(root.dataset.readinessUrl);
      renderVerdict(body.data);
      renderChecks(body.data.checks || []);
      renderMistakes(body.data.mistakes || []);
      setStatus(status, "");
      root.dataset.state = "ready";
    } catch (error) {
      setStatus(status, error.message, true);
      root.dataset.state = "error";
    }
  }

  async function runVerification() {
    runButton.disabled = true;
    runButton.textContent = "Running…";
    result.hidden = false;
    result.className = "verification";
    result.replaceChildren(el("p", { className: "muted" }, "Sending a test click, lead and sale…"));
    try {
      const body = await api(runButton.dataset.url, { method: "POST", body: {} });
      const data = body.data;
      const steps = (data.steps || []).map((step) =>
        el(
          "li",
          { className: step.ok ? "pass" : "fail", dataset: { step: step.step } },
          `${step.ok ? "✓" : "✕"} ${step.step}`,
          step.message ? ` — ${step.message}` : "",
        ),
      );
      result.className = `verification alert ${data.success ? "ok" : "bad"}`;
      result.dataset.success = String(Boolean(data.success));
      result.replaceChildren(
        el(
          "strong",
          {},
          data.success ? "Verification passed" : "Verification failed",
          data.duration_ms !== undefined ? ` in ${Math.round(data.duration_ms)} ms` : "",
        ),
        data.run_id ? el("span", { className: "muted small" }, ` (run ${data.run_id})`) : null,
        el("ol", {}, steps),
      );
      load();
    } catch (error) {
      result.className = "verification alert bad";
      result.replaceChildren(el("strong", {}, "Verification could not run: "), error.message);
    } finally {
      runButton.disabled = false;
      runButton.textContent = "Run verification";
    }
  }

  if (runButton) runButton.addEventListener("click", runVerification);
  load();
})();
