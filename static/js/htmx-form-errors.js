// A 400 from this site is a form re-rendered with its errors: swap it in like a 200
// (htmx leaves 4xx responses out by default, which would hide the error).
document.addEventListener("htmx:beforeSwap", function (event) {
  if (event.detail.xhr.status === 400) {
    event.detail.shouldSwap = true;
    event.detail.isError = false;
  }
});
