// The portal's small page behaviours, from this file rather than inline scripts or
// on* attributes, so that the Content-Security-Policy allows scripts from the portal
// itself only (script-src 'self'). Delegated listeners: they work on parts htmx swaps in.
document.addEventListener("change", function (event) {
  var field = event.target.closest("[data-autosubmit]");
  if (field && field.form) {
    field.form.submit();
  }
});
document.addEventListener("click", function (event) {
  var field = event.target.closest("[data-select-on-click]");
  if (field) {
    field.select();
  }
  var button = event.target.closest("[data-copy-from]");
  if (button && navigator.clipboard) {
    var source = document.getElementById(button.dataset.copyFrom);
    if (source) {
      navigator.clipboard.writeText(source.value);
    }
  }
});
document.addEventListener("DOMContentLoaded", function () {
  var reload = document.querySelector("[data-reload-after]");
  if (reload) {
    setTimeout(function () { window.location.reload(); }, 1000 * Number(reload.dataset.reloadAfter));
  }
});
