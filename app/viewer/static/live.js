// A running debate's page updates itself: poll the small state record, and when a new
// checkpoint lands, fetch the page's live part and put it in place, keeping open turns open.
// The record of a debate this server runs carries what its calls are writing now (drafts):
// each is shown as text (never as markup) until its reply lands in the live part.
(function () {
  "use strict";
  var page = document.getElementById("debate");
  if (!page) { return; }
  var stateUrl = page.dataset.state;
  var liveUrl = page.dataset.live;
  var checkpoint = page.dataset.checkpoint;
  var status = page.dataset.status;
  var PERIOD = 200;
  var drawn = Date.now();  // when the live part now shown was read (the page's load, then each swap)
  var drafts = [];

  function showDrafts() {
    var box = document.getElementById("drafts");
    if (!box) { return; }
    var wanted = {};
    drafts.forEach(function (d) {
      if (document.querySelector('#live [data-task="' + CSS.escape(d.task) + '"]')) { return; }  // landed
      wanted[d.task] = true;
      var el = box.querySelector('[data-draft="' + CSS.escape(d.task) + '"]');
      if (!el) {
        el = document.createElement("details");
        el.open = true;
        el.dataset.draft = d.task;
        el.className = "turn draft";
        el.appendChild(document.createElement("summary")).appendChild(document.createElement("span")).className = "label";
        el.appendChild(document.createElement("div")).className = "text";
        box.appendChild(el);
      }
      if (/^[a-z_]+$/.test(d.kind)) { el.classList.add(d.kind); }
      el.querySelector(".label").textContent = d.kind + " by " + d.who + ", " + (d.done ? "written, being recorded" : "being written");
      var text = el.querySelector(".text");
      if (text.textContent !== d.text) { text.textContent = d.text; }
    });
    box.querySelectorAll("[data-draft]").forEach(function (el) {
      if (!wanted[el.dataset.draft]) { el.remove(); }
    });
    page.dataset.drafted = String(Date.now());
  }

  // How long the step has run, counted on from the server's own reading (the two clocks may differ).
  function ticked() {
    var ran = document.querySelector("#live .ran");
    if (!ran) { return; }
    if (!ran.dataset.drawn) { ran.dataset.drawn = String(drawn); }
    var s = Number(ran.dataset.read) - Number(ran.dataset.since) + (Date.now() - Number(ran.dataset.drawn)) / 1000;
    var m = Math.floor(Math.round(s) / 60);
    ran.textContent = s < 60 ? s.toFixed(1) + " s"
      : m < 60 ? m + " min " + String(Math.round(s) % 60).padStart(2, "0") + " s"
      : Math.floor(m / 60) + " h " + String(m % 60).padStart(2, "0") + " min";
  }

  function openTurns() {
    var open = [];
    document.querySelectorAll("#live details[open]").forEach(function (d) { if (d.id) { open.push(d.id); } });
    return open;
  }

  function swap(html) {
    var keep = openTurns();
    var live = document.getElementById("live");
    var next = new DOMParser().parseFromString(html, "text/html");
    live.replaceChildren.apply(live, Array.prototype.slice.call(next.body.childNodes));
    drawn = Date.now();
    keep.forEach(function (id) { var d = document.getElementById(id); if (d) { d.open = true; } });
    showDrafts();
    page.dataset.updated = String(Date.now());
  }

  // Whether a person has typed into the answer form (or ticked a box) that a reload would lose.
  function typing() {
    var typed = false;
    document.querySelectorAll(".answer-form textarea, .answer-form input").forEach(function (f) {
      if (f.type === "hidden") { return; }
      if (f.type === "checkbox" ? f.checked : f.value.trim() !== "") { typed = true; }
    });
    return typed;
  }

  function outdated() {
    var form = document.querySelector(".answer-form");
    if (!form || document.getElementById("questions-outdated")) { return; }
    var note = document.createElement("p");
    note.id = "questions-outdated";
    note.className = "failure";
    note.textContent = "The debate has moved on since this page was drawn. Send what you typed: an answer to a " +
      "question that no longer waits is refused and shown back to you, never recorded as a pass.";
    form.parentNode.insertBefore(note, form);
  }

  function poll() {
    fetch(stateUrl, { cache: "no-store", credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (now) {
        if (!now) { return; }
        if (now.status !== status && (now.status === "waiting for a person" || status === "waiting for a person")) {
          if (!typing()) {
            window.location.reload();  // the questions' form appears or goes
            return;
          }
          outdated();  // never throw away what a person is typing: say the questions changed instead
        }
        drafts = now.drafts || [];
        showDrafts();
        if (now.status === "running") { ticked(); }
        var moved = now.checkpoint !== checkpoint || now.status !== status;
        checkpoint = now.checkpoint;
        status = now.status;
        page.dataset.status = status;
        if (moved) {
          return fetch(liveUrl, { cache: "no-store", credentials: "same-origin" })
            .then(function (r) { return r.ok ? r.text() : null; })
            .then(function (html) { if (html !== null) { swap(html); } });
        }
      })
      .catch(function () { /* the server restarts or the network blinks: try again */ })
      .then(function () { window.setTimeout(poll, status === "running" ? PERIOD : 5 * PERIOD); });
  }

  window.setTimeout(poll, PERIOD);
})();
