// The seat-inventory checkout API from a browser, with nothing but fetch.
// The API's base URL comes from config.js (`seats local up` serves one pointing at the local API),
// or from ?api=...; with ApiAuth=API_KEY pass ?apiKey=... (IAM auth needs SigV4 signing, which a
// page cannot do without credentials: use JWT or API keys for browsers, see docs/api.md).
"use strict";

const params = new URLSearchParams(location.search);
const API = (params.get("api") || window.SEATS_API_URL || `${location.origin}/v1`).replace(/\/$/, "");
const API_KEY = params.get("apiKey");
const $ = (id) => document.getElementById(id);

async function call(method, path, body, headers = {}) {
  const response = await fetch(API + path, {
    method,
    headers: {
      ...(body === undefined ? {} : { "Content-Type": "application/json" }),
      ...(API_KEY ? { "x-api-key": API_KEY } : {}),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : null };
}

function say(text, kind = "") {
  const outcome = $("outcome");
  outcome.textContent = text;
  outcome.className = kind;
}

async function showSeats() {
  const event = $("event").value.trim();
  const answer = await call("GET", `/events/${encodeURIComponent(event)}/availability`);
  const rows = $("seats").querySelector("tbody");
  rows.replaceChildren();
  if (answer.status !== 200) {
    $("seats").hidden = true;
    say(answer.body?.message || `availability: HTTP ${answer.status}`, "error");
    return;
  }
  const select = $("seat-class");
  const chosen = select.value;
  select.replaceChildren();
  for (const listed of answer.body.seat_classes) {
    // A sharded class has no figures on the event's route: its own route sums its shards.
    let line = listed;
    if (listed.sharded) {
      const exact = await call("GET", listed.availability);
      line = exact.status === 200 ? exact.body : { ...listed, seats_left: "?", held: "?", sold: "?" };
    }
    const row = rows.insertRow();
    row.dataset.seatClass = line.seat_class;
    for (const [value, numeric] of [[line.seat_class], [line.seats_left, 1], [line.held, 1], [line.sold, 1], [line.sale]]) {
      const cell = row.insertCell();
      cell.textContent = value;
      if (numeric) cell.className = "num";
    }
    select.add(new Option(`${line.seat_class} (${line.seats_left} left)`, line.seat_class));
  }
  if (chosen) select.value = chosen;
  $("seats").hidden = false;
}

// GET /reservations/{id} answers 404 with Retry-After until the service has recorded an answer.
async function waitForAnswer(reservationId) {
  for (;;) {
    const answer = await call("GET", `/reservations/${encodeURIComponent(reservationId)}`);
    if (answer.status === 200) return answer.body;
    if (answer.status !== 404) throw new Error(answer.body?.message || `HTTP ${answer.status}`);
    const seconds = Number(answer.headers.get("Retry-After") || "1");
    await new Promise((resolve) => setTimeout(resolve, Math.min(seconds, 1) * 1000));
  }
}

async function reserve(submit) {
  submit.preventDefault();
  $("reserve").disabled = true;
  try {
    // One key per checkout attempt: a retried POST with the same key never takes seats twice.
    const key = crypto.randomUUID ? crypto.randomUUID() : `r-${Date.now()}-${Math.random().toString(16).slice(2)}`;
    const sent = await call(
      "POST",
      "/reservations",
      {
        event_id: $("event").value.trim(),
        seat_class: $("seat-class").value,
        quantity: Number($("quantity").value),
        customer_id: $("customer").value.trim(),
      },
      { "Idempotency-Key": key },
    );
    if (sent.status !== 202) {
      say(sent.body?.message || `HTTP ${sent.status}`, "error");
      return;
    }
    say(`Reservation ${sent.body.reservation_id} queued; waiting for the answer...`, "pending");
    const answer = await waitForAnswer(sent.body.reservation_id);
    say(`${answer.status}: ${answer.answer.reason} (reservation ${answer.reservation_id})`, answer.status);
    await showSeats();
  } catch (error) {
    say(String(error), "error");
  } finally {
    $("reserve").disabled = false;
  }
}

$("api-url").textContent = API;
$("customer").value = `c-${Math.random().toString(16).slice(2, 8)}`;
$("event").value = params.get("event") || "";
$("show-seats").addEventListener("click", showSeats);
$("checkout").addEventListener("submit", reserve);
if ($("event").value) showSeats();
