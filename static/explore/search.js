// Search suggestions (templates/explore/_bits.html#searchbox): the list HTMX puts under the
// box overlays the page. The down and up arrows move between its links (and back to the
// box), Escape closes it, a click or focus elsewhere closes it too, and a click in the
// box shows it again. No inline script:
// the Content-Security-Policy refuses it.
(function () {
  "use strict";

  function boxOf(node) {
    return node && node.closest ? node.closest(".search-box") : null;
  }

  function popOf(box) {
    return box ? box.querySelector(".suggestions-pop") : null;
  }

  function close(box) {
    var pop = popOf(box);
    if (pop) {
      pop.hidden = true;
    }
  }

  document.addEventListener("keydown", function (event) {
    var box = boxOf(event.target);
    if (!box) {
      return;
    }
    var pop = popOf(box);
    var input = box.querySelector("input[type=search]");
    if (event.key === "Escape") {
      close(box);
      input.focus();
      return;
    }
    if (event.key !== "ArrowDown" && event.key !== "ArrowUp") {
      return;
    }
    if (!pop || pop.hidden) {
      return;
    }
    var links = Array.prototype.slice.call(pop.querySelectorAll("a"));
    if (!links.length) {
      return;
    }
    event.preventDefault();
    var at = links.indexOf(document.activeElement);
    var next = event.key === "ArrowDown" ? at + 1 : at - 1;
    if (next < 0) {
      input.focus();
    } else {
      links[Math.min(next, links.length - 1)].focus();
    }
  });

  document.addEventListener("focusin", function (event) {
    var inside = boxOf(event.target);
    document.querySelectorAll(".search-box").forEach(function (box) {
      if (box !== inside) {
        close(box);
      }
    });
  });

  document.addEventListener("click", function (event) {
    var inside = boxOf(event.target);
    if (inside && event.target.matches("input[type=search]") && event.target.value) {
      var pop = popOf(inside);
      if (pop && pop.children.length) {
        pop.hidden = false; // a click in the box shows the last suggestions again
      }
    }
    document.querySelectorAll(".search-box").forEach(function (box) {
      if (box !== inside) {
        close(box);
      }
    });
  });
})();
