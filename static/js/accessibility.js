/* Accessibility helpers every page loads; each does nothing on a page without what it looks for.

   1. A form that comes back refused: focus goes to its first invalid field, whose aria-describedby reads the
      message, so keyboard and screen-reader users start where the correction is needed instead of at the top of
      the page. A refusal no field owns leaves focus on the form's error summary.
   2. A region that scrolls sideways (a wide table or a code snippet on a narrow screen) is in the tab order while
      it scrolls, so it can be scrolled with the arrow keys; one that fits is left out of it again. */
(function () {
  "use strict";

  function focusFirstError() {
    const invalid = document.querySelector('main [aria-invalid="true"]:not([disabled])');
    if (invalid) {
      invalid.focus();
      return;
    }
    const summary = document.querySelector("main [data-error-summary]");
    if (summary) summary.focus();
  }

  const SCROLLERS = "main .table-wrap, main pre";

  function markScroller(region) {
    if (region.scrollWidth > region.clientWidth + 1) {
      region.tabIndex = 0;
      region.dataset.scrolls = "true";
    } else if (region.dataset.scrolls) {
      region.removeAttribute("tabindex");
      delete region.dataset.scrolls;
    }
  }

  function watchScrollers() {
    const regions = document.querySelectorAll(SCROLLERS);
    regions.forEach(markScroller);
    if (!window.ResizeObserver) return;
    // The region's width changes with the window; its content's with the data a page script puts in.
    const observer = new ResizeObserver((entries) => {
      for (const entry of entries) markScroller(entry.target.closest(".table-wrap, pre") || entry.target);
    });
    for (const region of regions) {
      observer.observe(region);
      if (region.firstElementChild) observer.observe(region.firstElementChild);
    }
  }

  function start() {
    focusFirstError();
    watchScrollers();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
