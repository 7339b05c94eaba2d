// Send only the header part of a chosen GGUF file (File.slice) with the real file's size,
// so a 40 GB model never leaves the machine; the server reads the metadata and tensor
// infos from these bytes. Without JavaScript the whole file is posted (small files only).
(function () {
  "use strict";
  var form = document.getElementById("own-model-form");
  if (!form || !window.DataTransfer || !window.File) { return; }
  var headerBytes = parseInt(form.dataset.headerBytes, 10);
  form.addEventListener("submit", function () {
    var input = form.querySelector("input[name=gguf_file]");
    var file = input && input.files && input.files[0];
    if (!file || file.size <= headerBytes) { return; }
    var part = new DataTransfer();
    part.items.add(new File([file.slice(0, headerBytes)], file.name));
    input.files = part.files;
    form.querySelector("input[name=header_only]").value = "on";
    form.querySelector("input[name=file_size]").value = String(file.size);
  });
})();
