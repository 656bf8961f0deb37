/* Partner portal: copy buttons. <button data-copy-target="#id" hidden> copies that element's text. The buttons
   stay hidden without this script: the text itself is plain and selectable, so the page works without it. */
(function () {
  "use strict";

  async function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      try {
        await navigator.clipboard.writeText(text);
        return true;
      } catch (error) {
        /* refused (permissions, an unfocused page): fall back to copying a selection */
      }
    }
    const area = document.createElement("textarea");
    area.readOnly = true;
    area.value = text;
    area.setAttribute("aria-hidden", "true");
    area.style.position = "fixed";
    area.style.top = "-1000px";
    area.style.opacity = "0";
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

  document.querySelectorAll("[data-copy-target]").forEach((button) => {
    button.hidden = false;
  });

  document.addEventListener("click", async (event) => {
    const button = event.target.closest("[data-copy-target]");
    if (!button) return;
    const source = document.querySelector(button.dataset.copyTarget);
    if (!source) return;
    const copied = await copyText(source.textContent.trim());
    const label = button.dataset.label || button.textContent;
    button.dataset.label = label;
    // Not copied: the text is selected instead, for the visitor to copy with the keyboard or the menu.
    button.textContent = copied ? "Copied" : "Selected: copy it";
    if (!copied) window.getSelection().selectAllChildren(source);
    setTimeout(() => {
      button.textContent = label;
    }, 2000);
  });
})();
