// The seat-inventory checkout API from a browser, with nothing but fetch.
// The API's base URL comes from config.js (`seats local up` serves one pointing at the local API),
// or from ?api=...; with ApiAuth=API_KEY pass ?apiKey=... (IAM auth needs SigV4 signing, which a
// page cannot do without credentials: use JWT or API keys for browsers, see docs/reference/http-api.md).
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

// A mapped class (docs/guides/seat-maps.md): its layout comes once from GET /events/{event}/seat-map, each
// seat's state from GET .../sections/{section}/seats; the page draws it as SVG.
const STATES = { ".": "free", H: "held", S: "sold", B: "blocked", L: "held" }; // L: set aside for the waiting list
const SVG = "http://www.w3.org/2000/svg";
const PITCH = 18;
let seatMap = null; // the event's seat map (sections), or null
let seatStates = new Map(); // seat id -> ".", "H", "S" or "B"
const chosen = new Set(); // seat ids clicked

function mappedSections(seatClass) {
  return (seatMap?.sections || [])
    .filter((section) => section.seat_class === seatClass)
    .sort((a, b) => a.rank - b.rank || a.section.localeCompare(b.section));
}

function isMapped(seatClass) {
  return mappedSections(seatClass).length > 0;
}

// Each section's seats: fills seatStates and returns the class's totals.
async function readMappedClass(seatClass) {
  const line = { seat_class: seatClass, seats_left: 0, held: 0, sold: 0, sale: "OPEN" };
  const answers = await Promise.all(mappedSections(seatClass).map((section) => call("GET", section.seats)));
  for (const answer of answers) {
    if (answer.status !== 200) throw new Error(answer.body?.message || `seats: HTTP ${answer.status}`);
    for (const row of answer.body.rows) {
      const prefix = row.row_id.split("#")[0]; // <section>-<row>#<block>
      [...row.states].forEach((state, offset) => seatStates.set(`${prefix}-${row.first + offset}`, state));
    }
    for (const figure of ["seats_left", "held", "sold"]) line[figure] += answer.body[figure];
    if (answer.body.sale !== "OPEN") line.sale = answer.body.sale;
  }
  return line;
}

function svg(name, attributes = {}, text = "") {
  const element = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, value);
  if (text) element.textContent = text;
  return element;
}

function drawMap() {
  const seatClass = $("seat-class").value;
  const sections = mappedSections(seatClass);
  const holder = $("seat-map");
  holder.replaceChildren();
  holder.hidden = $("mapped-options").hidden = sections.length === 0;
  if (!sections.length) return;
  const widest = Math.max(...sections.flatMap((section) => section.rows.map((row) => row.seats)));
  const width = 48 + widest * PITCH;
  const picture = svg("svg", { id: "seat-svg", role: "img", "aria-label": `seat map of ${seatClass}` });
  let y = 0;
  for (const section of sections) {
    y += PITCH * 1.4;
    picture.append(svg("text", { x: 0, y, class: "section-label" }, `Section ${section.section}`));
    for (const row of section.rows) {
      y += PITCH;
      picture.append(svg("text", { x: 0, y: y + 4, class: "row-label" }, row.row));
      const flags = {};
      for (const [flag, positions] of Object.entries(row.flags || {})) {
        for (const position of positions) (flags[position] ||= []).push(flag);
      }
      const left = 48 + ((widest - row.seats) * PITCH) / 2; // rows centred
      for (let position = 1; position <= row.seats; position++) {
        const id = `${section.section}-${row.row}-${position}`;
        const state = STATES[seatStates.get(id) || "."];
        // Wheelchair and companion seats only with "Accessible seats" ticked: the service answers
        // such a seat chosen without `accessible` INVALID, which is not recorded (docs/reference/http-api.md).
        const accessibleSeat = (flags[position] || []).some((flag) => flag === "wheelchair" || flag === "companion");
        const choosable = state === "free" && (!accessibleSeat || $("accessible").checked);
        if (!choosable) chosen.delete(id);
        const seat = svg("circle", {
          cx: left + (position - 0.5) * PITCH,
          cy: y,
          r: PITCH / 2 - 2,
          class: ["seat", state, ...(flags[position] || []), chosen.has(id) ? "chosen" : ""].join(" ").trim(),
          "data-seat": id,
          "data-state": state,
        });
        seat.append(svg("title", {}, [id, state, ...(flags[position] || [])].join(", ")));
        if (choosable) seat.addEventListener("click", () => choose(id));
        seat.dataset.choosable = String(choosable);
        picture.append(seat);
      }
    }
  }
  picture.setAttribute("viewBox", `0 0 ${width} ${y + PITCH}`);
  picture.setAttribute("width", String(Math.min(2 * width, 720))); // a small map drawn larger
  holder.append(picture);
  showChosen();
}

function choose(id) {
  if (chosen.has(id)) chosen.delete(id);
  else chosen.add(id);
  drawMap();
}

function showChosen() {
  $("chosen").textContent = chosen.size
    ? `Chosen: ${[...chosen].join(", ")} (quantity ignored)`
    : "Click seats to choose them, or reserve the best available for the quantity.";
}

async function showSeats() {
  const event = $("event").value.trim();
  const [answer, mapAnswer] = await Promise.all([
    call("GET", `/events/${encodeURIComponent(event)}/availability`),
    call("GET", `/events/${encodeURIComponent(event)}/seat-map`),
  ]);
  seatMap = mapAnswer.status === 200 ? mapAnswer.body : null;
  seatStates = new Map();
  const rows = $("seats").querySelector("tbody");
  rows.replaceChildren();
  if (answer.status !== 200 && !seatMap) {
    $("seats").hidden = true;
    say(answer.body?.message || `availability: HTTP ${answer.status}`, "error");
    return;
  }
  const select = $("seat-class");
  const previous = select.value;
  select.replaceChildren();
  const counted = answer.status === 200 ? answer.body.seat_classes : [];
  const mapped = [...new Set((seatMap?.sections || []).map((section) => section.seat_class))];
  const lines = [];
  for (const listed of counted) {
    // A sharded class has no figures on the event's route: its own route sums its shards.
    if (!listed.sharded) lines.push(listed);
    else {
      const exact = await call("GET", listed.availability);
      lines.push(exact.status === 200 ? exact.body : { ...listed, seats_left: "?", held: "?", sold: "?" });
    }
  }
  for (const seatClass of mapped) lines.push({ ...(await readMappedClass(seatClass)), mapped: true });
  for (const line of lines) {
    const row = rows.insertRow();
    row.dataset.seatClass = line.seat_class;
    if (line.mapped) row.dataset.mapped = "true";
    for (const [value, numeric] of [[line.seat_class + (line.mapped ? " (seat map)" : "")], [line.seats_left, 1], [line.held, 1], [line.sold, 1], [line.sale]]) {
      const cell = row.insertCell();
      cell.textContent = value;
      if (numeric) cell.className = "num";
    }
    select.add(new Option(`${line.seat_class} (${line.seats_left} left)`, line.seat_class));
  }
  if (previous && lines.some((line) => line.seat_class === previous)) select.value = previous;
  $("seats").hidden = false;
  drawMap();
}

// GET /reservations/{id} answers 404 with Retry-After until the service has recorded an answer.
async function waitForAnswer(reservationId) {
  // Bounded: an answer that is never recorded (INVALID, e.g. a seat of another class) stays 404.
  for (const started = Date.now(); Date.now() - started < 60_000; ) {
    const answer = await call("GET", `/reservations/${encodeURIComponent(reservationId)}`);
    if (answer.status === 200) return answer.body;
    if (answer.status !== 404) throw new Error(answer.body?.message || `HTTP ${answer.status}`);
    const seconds = Number(answer.headers.get("Retry-After") || "1");
    await new Promise((resolve) => setTimeout(resolve, Math.min(seconds, 1) * 1000));
  }
  throw new Error(`no answer recorded for ${reservationId} after 60 s: it may have been refused as INVALID (see the outcomes topic)`);
}

// The tickets of a sale (docs/guides/checkin.md): GET /reservations/{id}/tickets answers them once
// the issuer has numbered the sale (an empty list until then); each live ticket's secret is drawn
// as a QR code (qrcode-generator, vendored: vendor/qrcode-generator.js).
async function showTickets(reservationId) {
  for (const started = Date.now(); Date.now() - started < 120_000; ) {
    const answer = await call("GET", `/reservations/${encodeURIComponent(reservationId)}/tickets`);
    if (answer.status !== 200) throw new Error(answer.body?.message || `tickets: HTTP ${answer.status}`);
    if (answer.body.tickets.length) return drawTickets(answer.body.tickets);
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  throw new Error(`the tickets of ${reservationId} were not numbered within 2 minutes`);
}

function ticketsFailed(error) {
  $("tickets").textContent = String(error);
  $("tickets-box").hidden = false;
}

function drawTickets(tickets) {
  const list = $("tickets");
  list.replaceChildren();
  for (const ticket of tickets) {
    const item = document.createElement("li");
    item.className = `ticket ${ticket.status}`;
    item.dataset.ticket = ticket.ticket;
    const label = document.createElement("p");
    label.textContent = `Ticket ${ticket.ticket}: ${ticket.seat_class}${ticket.seat ? ` seat ${ticket.seat}` : ""} (${ticket.status.replace("_", " ")})`;
    item.append(label);
    if (ticket.secret) {
      const qr = qrcode(0, "M"); // the smallest version that holds the secret, error correction M
      qr.addData(ticket.secret, "Byte");
      qr.make();
      const code = document.createElement("div");
      code.className = "qr";
      code.dataset.secret = ticket.secret;
      code.innerHTML = qr.createSvgTag({ cellSize: 4, margin: 4, scalable: false });
      item.append(code);
    }
    list.append(item);
  }
  $("tickets-box").hidden = false;
}

// The body of POST /reservations: chosen seats, or a quantity (best available for a mapped class,
// with its split and accessible options).
function request() {
  const body = { event_id: $("event").value.trim(), seat_class: $("seat-class").value, customer_id: $("customer").value.trim() };
  if ($("waitlist").checked) body.waitlist = true; // refused for lack of seats: join the waiting list
  if (!isMapped(body.seat_class)) return { ...body, quantity: Number($("quantity").value) };
  if ($("accessible").checked) body.accessible = true;
  if (chosen.size) return { ...body, seats: [...chosen] };
  return { ...body, quantity: Number($("quantity").value), ...($("split").checked ? { split: true } : {}) };
}

// The basket (docs/guides/orders.md): up to 4 lines, one per class, sent as one order's `lines`.
const MAX_LINES = 4;
let basket = []; // [{seat_class, quantity} or {seat_class, seats}]

function describeLine(line) {
  return line.seats ? `${line.seat_class}: ${line.seats.join(", ")}` : `${line.seat_class} x ${line.quantity}`;
}

function showBasket() {
  const list = $("basket");
  list.replaceChildren();
  for (const line of basket) {
    const item = document.createElement("li");
    item.dataset.seatClass = line.seat_class;
    item.textContent = describeLine(line);
    list.append(item);
  }
  $("buy-basket").disabled = basket.length === 0;
  $("add-line").disabled = basket.length >= MAX_LINES && !basket.some((l) => l.seat_class === $("seat-class").value);
}

// The form's class and quantity (or chosen seats) as a line; a class already in the basket is
// replaced (the service refuses two lines of one class).
function addLine() {
  const { seat_class, quantity, seats } = request();
  const line = seats ? { seat_class, seats } : { seat_class, quantity };
  const index = basket.findIndex((l) => l.seat_class === seat_class);
  if (index >= 0) basket[index] = line;
  else if (basket.length < MAX_LINES) basket.push(line);
  chosen.clear();
  drawMap();
  showBasket();
}

// POST /reservations, then the answer when it is recorded (its status returned, null on an
// error); the buttons stay off meanwhile.
async function send(body, buttons) {
  for (const button of buttons) button.disabled = true;
  try {
    // One key per checkout attempt: a retried POST with the same key never takes seats twice.
    const key = crypto.randomUUID ? crypto.randomUUID() : `r-${Date.now()}-${Math.random().toString(16).slice(2)}`;
    const sent = await call("POST", "/reservations", body, { "Idempotency-Key": key });
    if (sent.status !== 202) {
      say(sent.body?.message || `HTTP ${sent.status}`, "error");
      return null;
    }
    say(`Reservation ${sent.body.reservation_id} queued; waiting for the answer...`, "pending");
    const answer = await waitForAnswer(sent.body.reservation_id);
    const seats = answer.seats ? `; seats ${answer.seats.join(", ")}` : "";
    const lines = answer.lines ? `; lines ${answer.lines.map(describeLine).join(", ")}` : "";
    say(`${answer.status}: ${answer.answer.reason} (reservation ${answer.reservation_id}${seats}${lines})`, answer.status);
    chosen.clear();
    await showSeats();
    if (answer.status === "CONFIRMED") showTickets(answer.reservation_id).catch(ticketsFailed);
    if (answer.status === "WAITLISTED") watchWaiting(answer.reservation_id, answer.answer.position);
    return answer.status;
  } catch (error) {
    say(String(error), "error");
    return null;
  } finally {
    for (const button of buttons) button.disabled = false;
    showBasket();
  }
}

// The waiting list (docs/guides/waiting-list.md): the entry's position, then its offer (a hold the
// sweeper makes: status HELD, answer OFFERED) to take with POST .../confirmation before it runs out,
// or leave with POST .../waitlist-exit.
let waiting = null; // the reservation id on the list, or null

async function watchWaiting(reservationId, position) {
  waiting = reservationId;
  $("waitlist-box").hidden = false;
  $("take-offer").hidden = true;
  $("leave-list").hidden = false;
  $("waitlist-status").textContent = `Reservation ${reservationId} is on the waiting list at position ${position}.`;
  while (waiting === reservationId) {
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const now = await call("GET", `/reservations/${encodeURIComponent(reservationId)}`);
    if (now.status !== 200 || now.body.status === "WAITLISTED") continue;
    if (now.body.status === "HELD" && now.body.answer.outcome === "OFFERED") {
      const until = new Date(now.body.hold_expires_at * 1000).toLocaleTimeString();
      $("waitlist-status").textContent = `OFFERED: ${now.body.quantity} seat(s) held for you until ${until}.`;
      $("take-offer").hidden = false;
      $("leave-list").hidden = true;
    } else {
      $("waitlist-status").textContent = `${now.body.status}: ${now.body.answer.reason}`;
      $("take-offer").hidden = true;
      $("leave-list").hidden = true;
    }
    return;
  }
}

async function changeEntry(route) {
  const reservationId = waiting;
  if (!reservationId) return;
  const sent = await call("POST", `/reservations/${encodeURIComponent(reservationId)}/${route}`, {});
  if (sent.status !== 202) {
    say(sent.body?.message || `HTTP ${sent.status}`, "error");
    return;
  }
  waiting = null;
  $("take-offer").hidden = true;
  $("leave-list").hidden = true;
  const before = route === "confirmation" ? "HELD" : "WAITLISTED"; // the status the message moves on
  for (let tries = 0; tries < 30; tries++) {
    const now = await call("GET", `/reservations/${encodeURIComponent(reservationId)}`);
    if (now.status === 200 && now.body.status !== before) {
      $("waitlist-status").textContent = `${now.body.status} (reservation ${reservationId})`;
      if (now.body.status === "CONFIRMED") showTickets(reservationId).catch(ticketsFailed);
      await showSeats();
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

async function reserve(submit) {
  submit.preventDefault();
  await send(request(), [$("reserve")]);
}

async function buyBasket() {
  const body = { event_id: $("event").value.trim(), customer_id: $("customer").value.trim(), lines: basket };
  // A refused order took nothing: its basket stays, to change and buy again.
  if (["CONFIRMED", "HELD"].includes(await send(body, [$("buy-basket"), $("add-line")]))) {
    basket = [];
    showBasket();
  }
}

$("api-url").textContent = API;
$("customer").value = `c-${Math.random().toString(16).slice(2, 8)}`;
$("event").value = params.get("event") || "";
$("show-seats").addEventListener("click", showSeats);
$("checkout").addEventListener("submit", reserve);
$("add-line").addEventListener("click", addLine);
$("buy-basket").addEventListener("click", buyBasket);
$("take-offer").addEventListener("click", () => changeEntry("confirmation"));
$("leave-list").addEventListener("click", () => changeEntry("waitlist-exit"));
$("seat-class").addEventListener("change", drawMap);
$("accessible").addEventListener("change", drawMap);
if ($("event").value) showSeats();
