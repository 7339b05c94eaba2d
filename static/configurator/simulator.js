// Token-speed simulator and HTMX glue for the configurator page. No dependencies.
(function () {
  "use strict";
  var WORDS = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore magna aliqua".split(" ");
  var running = null;

  function reducedMotion() {
    return window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  }

  function start(box) {
    if (running) { clearTimeout(running); running = null; }
    var ttft = parseFloat(box.dataset.ttftS) || 0;
    var rate = parseFloat(box.dataset.tokensPerS) || 0;
    var total = parseInt(box.dataset.outputTokens, 10) || 256;
    var text = box.querySelector(".sim-text");
    var status = box.querySelector(".sim-status");
    text.textContent = "";
    if (rate <= 0) { status.textContent = "—"; return; }
    var seconds = ttft + total / rate;
    if (reducedMotion()) {
      // No animation: show the whole answer and say how long it would have taken.
      var words = [];
      for (var i = 0; i < total; i++) { words.push(WORDS[i % WORDS.length]); }
      text.textContent = words.join(" ");
      status.textContent = seconds.toFixed(1) + " s";
      return;
    }
    var t0 = performance.now();
    var emitted = 0;
    function tick() {
      var elapsed = (performance.now() - t0) / 1000;
      var due = Math.min(total, Math.floor((elapsed - ttft) * rate));
      while (emitted < due) { text.textContent += WORDS[emitted % WORDS.length] + " "; emitted++; }
      status.textContent = elapsed.toFixed(1) + " s · " + emitted + " / " + total;
      if (emitted < total) { running = setTimeout(tick, 30); } else { running = null; }
    }
    running = setTimeout(tick, Math.max(0, ttft * 1000 - 1));
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest(".sim-start");
    if (button) { start(button.closest(".simulator")); }
  });
})();
