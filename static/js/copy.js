// Copy buttons next to addresses and tokens that are shown once (share links, sign-up
// links, new API tokens). Loaded by base.html (no inline script: the CSP refuses it).
//
//   <code id="x">...</code>
//   <button type="button" class="copy" data-copy="x" data-copied="Copied" hidden
//           aria-label="Copy ...">Copy</button>
//
// The button is rendered hidden and shown here, so a page without JavaScript has no
// button that does nothing. Its words come from the template (translated there).
// navigator.clipboard needs a secure context (HTTPS or localhost); elsewhere, or when the
// browser refuses, the text is selected so that Ctrl+C / long-press copies it.
(function () {
  "use strict";

  function selectText(target) {
    if (target.select) {
      target.select();
      return;
    }
    var range = document.createRange();
    range.selectNodeContents(target);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }

  function fallback(target) {
    selectText(target);
    try {
      return document.execCommand("copy");
    } catch (error) {
      return false;
    }
  }

  function say(button, status, text) {
    status.textContent = text;
    button.classList.add("copied");
    window.setTimeout(function () {
      status.textContent = "";
      button.classList.remove("copied");
    }, 4000);
  }

  function setUp(button) {
    var target = document.getElementById(button.getAttribute("data-copy") || "");
    if (!target || button.hasAttribute("data-copy-ready")) return;
    button.setAttribute("data-copy-ready", "");
    // Read out by screen readers after a copy; visible too, beside the button.
    var status = document.createElement("span");
    status.className = "copy-status";
    status.setAttribute("role", "status");
    button.insertAdjacentElement("afterend", status);
    button.hidden = false;
    button.addEventListener("click", function () {
      var text = (target.value !== undefined ? target.value : target.textContent).trim();
      var copied = button.getAttribute("data-copied") || "";
      var selectInstead = button.getAttribute("data-select") || "";
      var done = function () { say(button, status, copied); };
      var failed = function () {
        if (fallback(target)) done();
        else say(button, status, selectInstead);
      };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(done, failed);
      } else {
        failed();
      }
    });
  }

  function setUpAll(root) {
    var buttons = root.querySelectorAll("button[data-copy]");
    Array.prototype.forEach.call(buttons, setUp);
  }

  document.addEventListener("DOMContentLoaded", function () { setUpAll(document); });
  // Buttons that arrive in an htmx swap.
  document.addEventListener("htmx:afterSwap", function (event) { setUpAll(event.target); });
})();
