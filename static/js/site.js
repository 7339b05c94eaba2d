// Site shell behaviour, loaded by base.html on every page (no inline script: the CSP
// refuses it). Everything here is an enhancement: without JavaScript the header stays
// open and wraps, and the language switch returns to the address the server rendered.
(function () {
  "use strict";

  // Phones: the header's navigation, search and tools fold behind a "Menu" button.
  // The class "has-menu" lets site.css hide the menu only once the button works.
  function setUpMenu() {
    var header = document.getElementById("topbar");
    if (!header) return;
    var button = header.querySelector(".menu-toggle");
    var menu = document.getElementById("topbar-menu");
    if (!button || !menu) return;
    header.classList.add("has-menu");
    function setOpen(open) {
      header.classList.toggle("open", open);
      button.setAttribute("aria-expanded", open ? "true" : "false");
    }
    button.addEventListener("click", function () {
      setOpen(!header.classList.contains("open"));
    });
    document.addEventListener("keydown", function (event) {
      if (event.key === "Escape" && header.classList.contains("open")) {
        setOpen(false);
        button.focus();
      }
    });
  }

  // The language switch goes back to the current address with its query, also after an
  // HTMX swap has pushed a new one (hx-push-url): the hidden next= field the server
  // rendered holds the address the page was first loaded at, and stays the fallback.
  function setUpLanguageSwitch() {
    var forms = document.querySelectorAll("form.langs");
    Array.prototype.forEach.call(forms, function (form) {
      form.addEventListener("submit", function () {
        var next = form.querySelector('input[name="next"]');
        if (next) {
          next.value = window.location.pathname + window.location.search + window.location.hash;
        }
      });
    });
  }

  function start() {
    setUpMenu();
    setUpLanguageSwitch();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
