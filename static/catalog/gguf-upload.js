// Send only the header part of a GGUF file (File.slice), so a 40 GB model never leaves
// the machine; the server reads the metadata and tensor infos from these bytes.
// Without JavaScript the form posts the whole file (accepted only for small files).
(function () {
  "use strict";
  var form = document.getElementById("gguf-form");
  if (!form || !window.FormData || !window.XMLHttpRequest) { return; }
  var progress = document.getElementById("gguf-progress");
  var headerBytes = parseInt(form.dataset.headerBytes, 10);

  form.addEventListener("submit", function (event) {
    var input = form.querySelector("input[type=file]");
    var file = input && input.files && input.files[0];
    if (!file) { return; }
    event.preventDefault();
    var data = new FormData(form);
    var part = file.slice(0, Math.min(file.size, headerBytes));
    data.set("file", part, file.name);
    data.set("header_only", "on");
    data.set("file_size", String(file.size));

    var xhr = new XMLHttpRequest();
    xhr.open("POST", form.action);
    // The view answers an htmx-style request with the result fragment only.
    xhr.setRequestHeader("HX-Request", "true");
    xhr.upload.addEventListener("progress", function (e) {
      if (e.lengthComputable) { progress.value = Math.round(100 * e.loaded / e.total); }
    });
    xhr.addEventListener("load", function () {
      progress.hidden = true;
      var target = document.getElementById("gguf-result");
      var holder = document.createElement("div");
      holder.innerHTML = xhr.responseText;
      var fresh = holder.querySelector("#gguf-result");
      if (target && fresh) { target.replaceWith(fresh); }
    });
    xhr.addEventListener("error", function () {
      progress.hidden = true;
      var target = document.getElementById("gguf-result");
      if (target) { target.textContent = form.dataset.errorMessage; }
    });
    progress.value = 0;
    progress.hidden = false;
    xhr.send(data);
  });
})();
