// Card payment with Stripe.js (its configuration from the page's stripe-config JSON).
(function () {
  const config = JSON.parse(document.getElementById("stripe-config").textContent);
  const stripe = Stripe(config.publishableKey, {locale: config.locale});
  const elements = stripe.elements({clientSecret: config.clientSecret});
  elements.create("payment").mount("#payment-element");
  const form = document.getElementById("payment-form");
  const button = document.getElementById("payment-submit");
  const message = document.getElementById("payment-message");
  form.addEventListener("submit", async function (event) {
    event.preventDefault();
    button.disabled = true;
    message.textContent = "";
    const result = await stripe.confirmPayment({elements: elements, confirmParams: {return_url: config.returnUrl}});
    if (result.error) {
      message.textContent = result.error.message;
      button.disabled = false;
    }
  });
})();
