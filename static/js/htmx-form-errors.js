// A 400 from this site is a form re-rendered with its errors: swap it in like a 200
// (htmx leaves 4xx responses out by default, which would hide the error).
document.addEventListener("htmx:beforeSwap", function (event) {
  if (event.detail.xhr.status === 400) {
    event.detail.shouldSwap = true;
    event.detail.isError = false;
  }
});

// Results that no longer match their form. A form with data-stale-target="#results" greys
// that element (class "stale") while one of its fields holds a value the field refuses,
// and while a new answer is on its way; the answer replaces the element, without the
// class. The form is novalidate: a bad value still goes to the server, which answers 400
// with the error next to the field and no figures.
(function () {
  function target(form) {
    var selector = form.getAttribute("data-stale-target");
    return selector ? document.querySelector(selector) : null;
  }
  function mark(form, stale) {
    var element = target(form);
    if (!element) return;
    element.classList.toggle("stale", stale);
    if (stale) element.setAttribute("aria-busy", "true");
    else element.removeAttribute("aria-busy");
  }
  function invalid(form) {
    return Array.prototype.some.call(form.elements, function (field) {
      return field.willValidate && !field.validity.valid;
    });
  }
  document.addEventListener("input", function (event) {
    var field = event.target;
    var form = field && field.form;
    if (!form || !form.hasAttribute("data-stale-target")) return;
    if (field.willValidate) {
      field.setAttribute("aria-invalid", field.validity.valid ? "false" : "true");
    }
    mark(form, invalid(form));
  });
  document.addEventListener("htmx:beforeRequest", function (event) {
    var form = event.detail.elt;
    if (form && form.hasAttribute && form.hasAttribute("data-stale-target")) mark(form, true);
  });
})();

// <details data-keep-open id=...> that an answer swaps in (out of band) stays open if the
// visitor had opened it; the server opens it only when something in it is set or wrong.
(function () {
  var open = [];
  document.addEventListener("htmx:beforeSwap", function () {
    open = Array.prototype.map.call(
      document.querySelectorAll("details[data-keep-open][open][id]"),
      function (details) { return details.id; }
    );
  });
  document.addEventListener("htmx:afterSettle", function () {
    open.forEach(function (id) {
      var details = document.getElementById(id);
      if (details) details.open = true;
    });
  });
})();
