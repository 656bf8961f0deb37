/* API key page (owners): Regenerate -> confirmation dialog -> POST /api/programs/<id>/regenerate-key {"mode"}.
   The new key is put on the page once; it is not kept anywhere else and a reload does not show it again. */
(function () {
  "use strict";
  const { api, el, formatTime, setStatus } = window.svcDash;
  const root = document.getElementById("keys");
  const dialog = document.getElementById("regenerate-dialog");
  if (!root || !dialog) return;
  const confirmButton = document.getElementById("regenerate-confirm");
  const cancelButton = document.getElementById("regenerate-cancel");
  const newKey = document.getElementById("new-key");
  const newKeyValue = document.getElementById("new-key-value");
  const error = document.getElementById("key-error");
  let mode = "live";

  function open(chosen) {
    mode = chosen;
    for (const node of dialog.querySelectorAll("[data-dialog-mode]")) node.textContent = mode;
    setStatus(error, "");
    error.hidden = true;
    dialog.showModal();
  }

  async function regenerate() {
    confirmButton.disabled = cancelButton.disabled = true;
    confirmButton.textContent = "Regenerating…";
    try {
      const body = await api(root.dataset.regenerateUrl, { method: "POST", body: { mode } });
      const data = body.data;
      dialog.close();
      newKeyValue.textContent = data.api_key;
      for (const node of newKey.querySelectorAll("[data-new-key-mode]")) node.textContent = data.mode || mode;
      newKey.hidden = false;
      const masked = root.querySelector(`[data-masked-for="${mode}"]`);
      if (masked) masked.textContent = data.api_token_masked;
      const created = root.querySelector(`[data-created-for="${mode}"]`);
      if (created) created.textContent = formatTime(new Date().toISOString()).slice(0, 16);
      const state = root.querySelector(`[data-status-for="${mode}"]`);
      if (state) state.replaceChildren(el("span", { className: "badge ok" }, "active"));
      // Regenerating clears the rotation flag of the live key.
      const warning = document.getElementById("rotation-warning");
      if (mode === "live" && warning) warning.remove();
      newKey.scrollIntoView({ block: "nearest" });
    } catch (failure) {
      dialog.close();
      error.hidden = false;
      setStatus(error, failure.message, true);
    } finally {
      confirmButton.disabled = cancelButton.disabled = false;
      confirmButton.textContent = "Regenerate key";
    }
  }

  for (const button of root.querySelectorAll("[data-regenerate-mode]")) {
    button.addEventListener("click", () => open(button.dataset.regenerateMode));
  }
  cancelButton.addEventListener("click", () => dialog.close());
  confirmButton.addEventListener("click", regenerate);
})();
