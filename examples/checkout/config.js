// The checkout API's base URL, e.g. "https://abc123.execute-api.us-east-1.amazonaws.com/v1" (the
// stack output CheckoutApiUrl). `seats local up` serves its own config.js pointing at the local API.
window.SEATS_API_URL = "";
