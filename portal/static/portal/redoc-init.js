// The API reference (Redoc), started from its settings in the page's JSON block.
(function () {
  var container = document.getElementById("redoc-container");
  var settings = JSON.parse(document.getElementById("redoc-settings").textContent);
  Redoc.init(container.dataset.schemaUrl, settings, container);
})();
