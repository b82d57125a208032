// AgentHub portal behaviours that htmx attributes do not cover. Loaded with
// `defer` from a same-origin URL (the CSP allows no inline script). Every
// handler is delegated from document, so content swapped in by htmx works
// without re-binding.
(function () {
  "use strict";

  // Copy buttons are hidden until this script runs (CSS: html.js .copy-btn).
  document.documentElement.classList.add("js");

  // copyText writes text to the clipboard; the async Clipboard API needs a
  // secure context (https or localhost), so fall back to a selected
  // off-screen textarea elsewhere.
  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text);
    }
    return new Promise(function (resolve, reject) {
      var ta = document.createElement("textarea");
      ta.value = text;
      ta.setAttribute("readonly", "");
      ta.className = "offscreen";
      document.body.appendChild(ta);
      ta.select();
      try {
        document.execCommand("copy") ? resolve() : reject(new Error("copy refused"));
      } catch (e) {
        reject(e);
      } finally {
        document.body.removeChild(ta);
      }
    });
  }

  // <button data-copy="text"> or <button data-copy-target="#id">.
  document.addEventListener("click", function (ev) {
    var btn = ev.target.closest("[data-copy], [data-copy-target]");
    if (!btn) return;
    ev.preventDefault();
    var text = btn.getAttribute("data-copy");
    if (text === null) {
      var el = document.querySelector(btn.getAttribute("data-copy-target"));
      text = el ? (el.value !== undefined && el.tagName === "INPUT" ? el.value : el.textContent) : "";
    }
    var label = btn.getAttribute("data-label") || btn.textContent;
    btn.setAttribute("data-label", label);
    copyText(text.trim()).then(function () {
      btn.textContent = "Copied";
      btn.classList.add("copied");
    }, function () {
      btn.textContent = "Press Ctrl+C";
    }).finally(function () {
      clearTimeout(btn._copyTimer);
      btn._copyTimer = setTimeout(function () {
        btn.textContent = label;
        btn.classList.remove("copied");
      }, 1600);
    });
  });

  // <form data-confirm="Delete this agent?"> asks before submitting.
  document.addEventListener("submit", function (ev) {
    var form = ev.target;
    var msg = form.getAttribute && form.getAttribute("data-confirm");
    if (msg && !window.confirm(msg)) {
      ev.preventDefault();
      ev.stopImmediatePropagation();
    }
  }, true);

  // <input data-match="password"> (the repeated password) must equal the
  // field of that id. The forms check on the server (novalidate), whose
  // answer to a mismatch clears both password fields (it never sends a
  // password back); this stops the mismatch before it is sent, says so
  // where the server would, and keeps what was typed.
  document.addEventListener("submit", function (ev) {
    var form = ev.target;
    if (!form.querySelectorAll) return;
    var repeats = form.querySelectorAll("input[data-match]");
    for (var i = 0; i < repeats.length; i++) {
      var repeat = repeats[i];
      var first = document.getElementById(repeat.getAttribute("data-match"));
      if (!first || !first.value || repeat.value === first.value) continue;
      ev.preventDefault();
      ev.stopImmediatePropagation();
      showFieldError(repeat, "does not match the password: type it again");
      repeat.focus();
      return;
    }
  }, true);

  // showFieldError puts msg in input's error line, as the server renders
  // one (web fieldError: the id its aria-describedby names).
  function showFieldError(input, msg) {
    var field = input.closest(".field");
    if (field) field.classList.add("has-error");
    var ids = (input.getAttribute("aria-describedby") || "").split(" ");
    var id = ids.filter(function (x) { return x.indexOf("err-") === 0; })[0];
    if (!id) return;
    var p = document.getElementById(id);
    if (!p) {
      p = document.createElement("p");
      p.className = "field-error";
      p.id = id;
      p.setAttribute("data-testid", "error-" + id.slice(4));
      (field || input.parentNode).appendChild(p);
    }
    p.textContent = msg;
  }

  // <details data-wide-open> (the search filters) start open on a wide
  // screen; on a phone they stay folded under their summary.
  if (window.matchMedia && window.matchMedia("(min-width: 641px)").matches) {
    document.querySelectorAll("details[data-wide-open]").forEach(function (d) { d.open = true; });
  }

  // After a form comes back with errors, put the cursor in the first bad
  // field (the server marks its wrapper .has-error).
  function focusFirstError() {
    // The server named the field to start at (autofocus): keep it.
    var named = document.querySelector("form [autofocus]");
    if (named && document.querySelector(".has-error")) { named.focus(); return; }
    var el = document.querySelector(".has-error input:not([type=hidden]), .has-error textarea, .has-error select");
    if (el) el.focus();
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", focusFirstError);
  } else {
    focusFirstError();
  }

  // <textarea data-count-max="4096" data-count-target="#id"> keeps a byte
  // counter current while typing (the limit is in bytes, as stored: line
  // breaks count once, surrounding blanks not at all); over the limit it
  // turns red. The server renders the first value, so it works without JS.
  function updateCount(ta) {
    var out = document.querySelector(ta.getAttribute("data-count-target"));
    if (!out) return;
    var max = parseInt(ta.getAttribute("data-count-max"), 10);
    var n = new TextEncoder().encode(ta.value.replace(/\r\n/g, "\n").trim()).length;
    out.textContent = n + " / " + max + " bytes";
    out.classList.toggle("over", n > max);
  }
  document.addEventListener("input", function (ev) {
    var t = ev.target;
    if (t && t.matches && t.matches("textarea[data-count-max]")) updateCount(t);
  });

  // On a narrow screen a search box says its shorter placeholder: the
  // long one would be cut mid-word.
  var narrow = window.matchMedia && window.matchMedia("(max-width: 40rem)");
  function placeholders() {
    document.querySelectorAll("input[data-placeholder-narrow]").forEach(function (el) {
      if (!el.hasAttribute("data-placeholder-wide")) el.setAttribute("data-placeholder-wide", el.placeholder);
      el.placeholder = narrow && narrow.matches ? el.getAttribute("data-placeholder-narrow") : el.getAttribute("data-placeholder-wide");
    });
  }
  placeholders();
  if (narrow && narrow.addEventListener) narrow.addEventListener("change", placeholders);

  // "/" focuses the search box, as on most sites with one.
  document.addEventListener("keydown", function (ev) {
    if (ev.key !== "/" || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    var t = ev.target;
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
    var box = document.querySelector("[data-search-box]");
    if (box) {
      ev.preventDefault();
      box.focus();
      box.select();
    }
  });
})();

// "Add skill" on the agent form: without JavaScript it is a submit button
// (action=add-skill) and the server answers with one more block; here the
// block is cloned from the form's <template> in place. The template's
// ids and names hold __i__ (the index) and __n__ (its number).
(function () {
  "use strict";
  document.addEventListener("click", function (ev) {
    var btn = ev.target.closest && ev.target.closest("[data-add-skill]");
    if (!btn) return;
    var form = btn.form;
    var rows = form && form.querySelector("[data-skill-rows]");
    var tpl = form && form.querySelector("template[data-skill-template]");
    if (!rows || !tpl) return;
    ev.preventDefault();
    var i = rows.querySelectorAll(".skill-row").length;
    var max = parseInt(btn.getAttribute("data-max"), 10) || 16;
    if (i >= max) return;
    var block = tpl.content.firstElementChild.cloneNode(true);
    block.querySelectorAll("[id], [for], [aria-describedby], [data-testid]").forEach(function (el) {
      ["id", "for", "aria-describedby"].forEach(function (a) {
        var v = el.getAttribute(a);
        if (v !== null) el.setAttribute(a, v.split("__i__").join(String(i)));
      });
    });
    var legend = block.querySelector("legend");
    if (legend) legend.textContent = legend.textContent.split("__n__").join(String(i + 1));
    rows.appendChild(block);
    if (i + 1 >= max) btn.hidden = true;
    var first = block.querySelector("input, textarea");
    if (first) first.focus();
  });
})();

// A skill's ID follows its name as you type ("Seven-Day Forecast" →
// "seven-day-forecast") until you type an ID of your own; the server
// makes the same id from the name when the ID comes empty.
(function () {
  "use strict";
  function skillIdFrom(name) {
    return name.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+/, "").slice(0, 64).replace(/-+$/, "");
  }
  document.addEventListener("input", function (ev) {
    var t = ev.target;
    if (!t || t.name !== "skill_name") return;
    var row = t.closest(".skill-row");
    var id = row && row.querySelector('input[name="skill_id"]');
    if (!id || id.readOnly) return;
    if (id.value === "" || id.value === id.getAttribute("data-derived")) {
      id.value = skillIdFrom(t.value);
      id.setAttribute("data-derived", id.value);
    }
  });
})();

// The theme toggle (hidden without JavaScript, where the system theme
// applies): switches between light and dark from whatever shows now, and
// remembers the choice for theme.js.
(function () {
  "use strict";
  function current() {
    var t = document.documentElement.getAttribute("data-theme");
    if (t) return t;
    return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
  }
  function label(btn) {
    var dark = current() === "dark";
    btn.setAttribute("aria-pressed", String(dark));
    btn.setAttribute("title", dark ? "Dark theme on: switch to light" : "Dark theme off: switch to dark");
  }
  document.querySelectorAll("[data-theme-toggle]").forEach(label);
  document.addEventListener("click", function (ev) {
    var btn = ev.target.closest && ev.target.closest("[data-theme-toggle]");
    if (!btn) return;
    var next = current() === "dark" ? "light" : "dark";
    document.documentElement.setAttribute("data-theme", next);
    try { window.localStorage.setItem("agentsite-theme", next); } catch (e) { /* not remembered */ }
    document.querySelectorAll("[data-theme-toggle]").forEach(label);
  });
})();

// The tool picker under an llm agent's Tools field (web toolPicker).
// Without JavaScript its Add and Search are submit buttons the server
// answers with the form; here Add puts the agent's id on a new line of
// the field in place and says "Added", and Enter in the search box
// searches instead of saving the form. The field stays the source of
// truth: what it says is what is saved.
(function () {
  "use strict";
  // listed reports whether a line of the field names id (its first word,
  // as the server's parseTools reads it).
  function listed(text, id) {
    return text.split(/\r?\n/).some(function (l) { return l.trim().split(/\s+/)[0] === id; });
  }
  // addToolLine is the server's addToolLine: id on a line of its own at
  // the end, unless a line names it already.
  function addToolLine(text, id) {
    if (listed(text, id)) return text;
    text = text.replace(/[\s]+$/, "");
    return text === "" ? id : text + "\n" + id;
  }
  document.addEventListener("click", function (ev) {
    var btn = ev.target.closest && ev.target.closest("[data-add-tool]");
    if (!btn) return;
    var field = btn.form && btn.form.querySelector('textarea[name="backend_tools"]');
    if (!field) return;
    ev.preventDefault();
    if (btn.hasAttribute("data-added")) return;
    field.value = addToolLine(field.value, btn.getAttribute("data-add-tool"));
    field.dispatchEvent(new Event("input", { bubbles: true }));
    btn.setAttribute("data-added", "");
    btn.setAttribute("aria-disabled", "true");
    btn.setAttribute("aria-label", (btn.getAttribute("aria-label") || "").replace(/^Add\b/, "Added"));
    btn.textContent = "Added";
  });
  document.addEventListener("keydown", function (ev) {
    var t = ev.target;
    if (ev.key !== "Enter" || !t || !t.matches || !t.matches("[data-tool-search]")) return;
    ev.preventDefault();
    if (window.htmx) window.htmx.trigger(t, "search");
  });
})();
