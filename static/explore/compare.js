// The compare page's column editor (templates/explore/compare.html): each model and card
// field is a combobox (ARIA 1.2, list autocomplete). HTMX fills its listbox with the
// names the site search ranks first; the down and up arrows move through the options,
// Enter or a click picks one, Escape or leaving the field closes the list. Without this
// script the field is a plain text box and the server reads the typed name. After a
// column is added, copied or removed in place, focus moves to the page's short status
// line so that a screen reader hears the new count. No inline script: the
// Content-Security-Policy refuses it.
(function () {
  "use strict";

  var COMBO = ".picker input[role=combobox]";

  function listOf(input) {
    return document.getElementById(input.getAttribute("aria-controls"));
  }

  function optionsOf(input) {
    var list = listOf(input);
    return list ? Array.prototype.slice.call(list.querySelectorAll("[role=option]")) : [];
  }

  function activeIndex(input) {
    var id = input.getAttribute("aria-activedescendant");
    var options = optionsOf(input);
    for (var i = 0; i < options.length; i++) {
      if (options[i].id === id) {
        return i;
      }
    }
    return -1;
  }

  function activate(input, index) {
    var options = optionsOf(input);
    options.forEach(function (option, i) {
      option.setAttribute("aria-selected", i === index ? "true" : "false");
    });
    if (index >= 0 && options[index]) {
      input.setAttribute("aria-activedescendant", options[index].id);
      options[index].scrollIntoView({ block: "nearest" });
    } else {
      input.removeAttribute("aria-activedescendant");
    }
  }

  function setOpen(input, open) {
    var list = listOf(input);
    var shown = open && optionsOf(input).length > 0;
    if (list) {
      list.hidden = !shown;
    }
    input.setAttribute("aria-expanded", shown ? "true" : "false");
    if (!shown) {
      activate(input, -1);
    }
  }

  function pick(input, option) {
    input.value = option.getAttribute("data-value");
    setOpen(input, false);
    input.focus();
  }

  document.addEventListener("keydown", function (event) {
    var input = event.target;
    if (!input.matches || !input.matches(COMBO)) {
      return;
    }
    var options = optionsOf(input);
    var open = input.getAttribute("aria-expanded") === "true";
    var at = activeIndex(input);
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      if (!options.length) {
        return;
      }
      event.preventDefault();
      if (!open) {
        setOpen(input, true);
        activate(input, event.key === "ArrowDown" ? 0 : options.length - 1);
        return;
      }
      var next = event.key === "ArrowDown" ? at + 1 : at - 1;
      activate(input, Math.max(0, Math.min(next, options.length - 1)));
    } else if (event.key === "Enter" && open && at >= 0) {
      event.preventDefault(); // pick, do not send the form yet
      pick(input, options[at]);
    } else if (event.key === "Escape" && open) {
      event.preventDefault();
      setOpen(input, false);
    }
  });

  // mousedown, not click: the field keeps its focus, so the list is not closed first.
  document.addEventListener("mousedown", function (event) {
    var option = event.target.closest ? event.target.closest(".picker [role=option]") : null;
    if (!option) {
      return;
    }
    event.preventDefault();
    pick(option.closest(".picker").querySelector(COMBO), option);
  });

  document.addEventListener("focusout", function (event) {
    if (event.target.matches && event.target.matches(COMBO)) {
      setOpen(event.target, false);
    }
  });

  // htmx:load fires on each element a swap brings in (an outerHTML swap's own
  // htmx:afterSwap goes to the element it replaced, no longer in the document).
  document.addEventListener("htmx:load", function (event) {
    var added = event.detail.elt;
    if (!added || !added.matches) {
      return;
    }
    if (added.matches(".picker-options")) {
      // New options: shown while their field has the focus, none active yet.
      var input = document.querySelector('[aria-controls="' + added.id + '"]');
      if (input) {
        setOpen(input, document.activeElement === input);
      }
    } else if (added.id === "compare") {
      var status = document.getElementById("compare-status");
      if (status) {
        status.focus();
      }
    }
  });
})();
