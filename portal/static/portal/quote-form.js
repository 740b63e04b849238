// The quote form: "add a line" copies the empty line template (Django formset).
document.getElementById("add-line").addEventListener("click", function () {
  var total = document.getElementById("id_lines-TOTAL_FORMS");
  var index = parseInt(total.value, 10);
  var html = document.getElementById("line-template").innerHTML.replace(/__prefix__/g, String(index));
  document.getElementById("line-rows").insertAdjacentHTML("beforeend", html);
  total.value = String(index + 1);
});
