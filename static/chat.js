// AgentChat: the live half of the chat page (/chat/{agent-id}). The page
// works without this script (the composer is a plain POST form); with it,
// messages go over the WebSocket at /api/v1/chat and replies stream in
// chunk by chunk. Protocol (docs/api.md, "The chat WebSocket"): we send
// {"type":"message","agent_id","conversation_id"?,"text"}; the server sends
// {"type":"chunk","text","html"?,"tail"?}… (a chunk that ends a line may carry the reply so far:
// its finished lines rendered, and the unfinished one as tail), then {"type":"done","conversation_id","text" (the whole reply),
// "html" (its Markdown, rendered), "message_id"} or {"type":"error","code","message","conversation_id"?,
// "stored","sent"} (what became of the message: handlers/chatws Out).
// While the agent answers it may ask other agents: each delegation comes as
// {"type":"step","step":{tool,agent_id,agent_name,host,name,server,text,reply,error,done}},
// once as it starts (done false) and once as it ends, and shows as a line
// above the reply, pending until its end replaces it.
// While the turn waits in its model's queue, {"type":"waiting","ahead"}
// says how many go first ("waiting for the model: 2 ahead" beside the
// typing dots); ahead -1, the first chunk or the end clears it.
//
// A turn outlives the page: the server sends {"type":"started","conversation_id","text" (the
// title)} once the message is stored, keeps the turn running if the socket
// closes, and stores the reply. A page (reloaded, or reconnected mid-reply)
// sends {"type":"attach","conversation_id"} and gets {"type":"attached","text" (so far)}
// and the rest of the frames, or {"type":"idle"} when the reply has ended
// meanwhile (the page then reloads to show it). {"type":"stop","conversation_id"}
// stops a reply (it ends as an error frame with code "stopped");
// {"type":"retry","conversation_id"} and {"type":"edit","conversation_id","text"}
// replace the last exchange.
//
// Everything comes from data- attributes on [data-chat] (the CSP allows no
// inline script). The markup comes from the page too: the script clones its
// <template>s (web/chat.templ chatTemplates), the server's own components,
// and puts text in only as text (textContent), except the html of done
// and chunk frames: the reply's Markdown, rendered and sanitized by the
// server.
(function () {
  "use strict";

  var root = document.querySelector("[data-chat]");
  if (!root || !window.WebSocket) return;

  function q(sel, within) { return (within || root).querySelector(sel); }

  var agentId = root.getAttribute("data-agent-id");
  var agentName = root.getAttribute("data-agent-name") || "";
  var convId = root.getAttribute("data-conversation-id") || "";
  var wsPath = root.getAttribute("data-ws-path") || "/api/v1/chat";
  var scroller = q("[data-chat-scroll]");
  var list = q("[data-testid=messages]");
  var form = q("[data-testid=composer]");
  var input = q("[data-testid=composer-input]", form);
  var sendBtn = q("[data-testid=composer-send]", form);
  var convField = q("input[name=c]", form);
  var note = q("[data-testid=composer-error]", form);
  var connEl = q("[data-testid=chat-connection]");
  var convList = q("[data-testid=conversation-list]");
  var stopBtn = q("[data-testid=composer-stop]", form);
  var editingEl = q("[data-testid=composer-editing]", form);
  var editing = false;  // the composer holds an edit of the last message

  var STATE_LABELS = {
    offline: "",
    connecting: "Connecting…",
    open: "Connected",
    reconnecting: "Reconnecting…"
  };

  var CONNECT_TIMEOUT = 10000; // ms before a pending handshake is given up

  var ws = null;        // the current socket, or null between attempts
  var attempt = 0;      // failed attempts since the last open, for the backoff
  var timer = 0;        // pending reconnect
  var leaving = false;  // the page is being unloaded: no reconnects, no errors
  var pending = null;   // the turn in flight: {user, agent, textNode, full, live, text, raw, got, steps, started}

  // ---------- Connection ----------

  function setState(s) {
    connEl.setAttribute("data-state", s);
    connEl.textContent = STATE_LABELS[s] || "";
  }

  // backoff is the wait before reconnect attempt n: 0.5 s doubling up to
  // 15 s, with ±25 % jitter so tabs do not all return at once after a
  // node restart.
  function backoff(n) {
    var base = Math.min(15000, 500 * Math.pow(2, n));
    return Math.round(base * (0.75 + Math.random() * 0.5));
  }

  function connect() {
    clearTimeout(timer);
    timer = 0;
    if (leaving || ws) return;
    setState(attempt === 0 ? "connecting" : "reconnecting");
    var proto = location.protocol === "https:" ? "wss://" : "ws://";
    var sock;
    try {
      sock = new WebSocket(proto + location.host + wsPath);
    } catch (e) {
      scheduleReconnect();
      return;
    }
    ws = sock;
    // A handshake that hangs counts as failed.
    var watchdog = setTimeout(function () {
      if (sock.readyState === WebSocket.CONNECTING) lost(sock);
    }, CONNECT_TIMEOUT);
    sock.addEventListener("open", function () {
      clearTimeout(watchdog);
      if (ws !== sock) return;
      attempt = 0;
      setState("open");
      if (note.getAttribute("data-kind") === "connection") hideNote();
      // A reply on its way (the page was rendered, or the socket dropped,
      // mid-reply): the server kept it running; pick it up again.
      if (pending && pending.started && convId) {
        sock.send(JSON.stringify({ type: "attach", conversation_id: convId }));
      }
    });
    sock.addEventListener("message", function (ev) {
      if (ws === sock) onFrame(ev.data);
    });
    // Some failures (a refused port, say) fire "error" without "close".
    sock.addEventListener("error", function () { lost(sock); });
    sock.addEventListener("close", function () { lost(sock); });
  }

  // lost handles the end of sock, however it ended, once.
  function lost(sock) {
    if (ws !== sock) return;
    ws = null;
    try {
      sock.close();
    } catch (e) { /* already closed */ }
    if (leaving) return;
    if (pending && !(pending.started && convId)) {
      // Nothing says the message was stored: it may not have arrived.
      failPending({ code: "disconnected", message: "The connection dropped before the reply finished. Send your message again once reconnected." });
    }
    // A started turn goes on at the server; the reconnect attaches to it.
    scheduleReconnect();
  }

  function scheduleReconnect() {
    if (leaving || timer) return;
    setState("reconnecting");
    timer = setTimeout(connect, backoff(attempt++));
  }

  // reconnectNow skips the rest of the backoff (the user wants to send).
  function reconnectNow() {
    if (ws || leaving) return;
    attempt = Math.min(attempt, 1);
    connect();
  }

  window.addEventListener("online", reconnectNow);
  window.addEventListener("pagehide", function () {
    leaving = true;
    clearTimeout(timer);
    timer = 0;
    if (ws) {
      var s = ws;
      ws = null;
      s.close();
    }
  });
  window.addEventListener("pageshow", function (ev) {
    if (!ev.persisted) return; // back/forward cache: the socket was closed
    leaving = false;
    attempt = 0;
    connect();
  });

  // ---------- Frames ----------

  function onFrame(data) {
    var f;
    try {
      f = JSON.parse(data);
    } catch (e) {
      return;
    }
    if (!f || typeof f !== "object") return;
    switch (f.type) {
      case "started":
        if (pending && typeof f.conversation_id === "string" && f.conversation_id) {
          pending.started = true;
          // The server's title (the first message as text, its Markdown
          // taken out) names the conversation in the side list.
          if (typeof f.text === "string" && f.text) pending.title = f.text;
          adoptConversation(f.conversation_id, pending.title || pending.text);
        }
        break;
      case "attached":
        if (pending && typeof f.text === "string") {
          dropLive(pending);
          pending.textNode.data = "";
          pending.full = "";
          if (f.text) addChunk(f.text);
        }
        break;
      case "idle":
        // The reply ended while this page was away from it: the stored
        // conversation shows how.
        if (pending && pending.started) {
          pending = null;
          location.reload();
        }
        break;
      case "chunk":
        if (pending && typeof f.text === "string") {
          addChunk(f.text);
          if (typeof f.html === "string" && f.html !== "") showLive(f.html, typeof f.tail === "string" ? f.tail : "");
        }
        break;
      case "step":
        if (pending && f.step && typeof f.step === "object") showStep(f.step);
        break;
      case "waiting":
        if (pending) showWait(pending, typeof f.ahead === "number" ? f.ahead : -1);
        break;
      case "done":
        if (pending) finishPending(f);
        break;
      case "error":
        if (pending) {
          failPending(f);
        } else {
          var line = addMessage(errorLine(f), f.message || "Something went wrong.", f.code);
          q("[data-testid=message-retry]", line).remove(); // no message of ours to retry
        }
        break;
    }
  }

  // showWait shows the turn's place in its model's queue, or hides it
  // (ahead < 0).
  function showWait(p, ahead) {
    var el = q("[data-testid=model-wait]", p.agent);
    if (!el) return;
    el.hidden = ahead < 0;
    el.textContent = ahead < 0 ? "" : "waiting for the model: " + ahead + " ahead";
  }

  function addChunk(text) {
    var stick = nearBottom();
    if (!pending.got) {
      pending.got = true;
      showWait(pending, -1);
      var typing = q("[data-testid=typing]", pending.agent);
      if (typing) typing.remove();
      pending.agent.removeAttribute("aria-busy");
    }
    pending.full += text;
    pending.textNode.appendData(text);
    if (stick) scrollToEnd();
  }

  // showLive shows a streaming reply as Markdown: html, the server's
  // sanitized rendering of its finished lines (web/markdown), then tail,
  // the unfinished line, as text; the chunks that follow append to tail
  // until the next rendering. The finished lines render as they will
  // when the reply is done, so nothing jumps at the end.
  function showLive(html, tail) {
    var stick = nearBottom();
    if (!pending.live) {
      // The reply's Markdown so far, beside (not as) its plain text.
      pending.live = clone("markdown");
      pending.live.className = "msg-md msg-live";
      pending.live.setAttribute("data-testid", "message-live-markdown");
      pending.live.setAttribute("data-live-markdown", "true");
      var plain = q(".msg-text", pending.agent);
      plain.parentNode.insertBefore(pending.live, plain);
    }
    pending.live.innerHTML = html;
    pending.textNode.data = tail;
    if (stick) scrollToEnd();
  }

  // dropLive takes p's live rendering away, its whole text back in the
  // plain bubble.
  function dropLive(p) {
    if (!p.live) return;
    p.live.remove();
    p.live = null;
    p.textNode.data = p.full;
  }

  // showStep adds the line of a step frame above the reply, or replaces
  // the pending line of the step it ends.
  function showStep(s) {
    var state = !s.done ? "pending" : (s.error ? "failed" : "done");
    if (typeof s.tool !== "string" || !/^[a-z_]+$/.test(s.tool)) return;
    var name = "step-" + s.tool + "-" + state;
    if (!q("template[data-template=\"" + name + "\"]")) return; // a tool this page does not know
    var li = clone(name);
    fillStep(li, s);
    var key = [s.tool, s.agent_id || s.name || "", s.server || "", s.text || ""].join("\n");
    var stick = nearBottom();
    var open = null;
    for (var i = 0; i < pending.steps.length && state !== "pending"; i++) {
      if (pending.steps[i].key === key) {
        open = pending.steps.splice(i, 1)[0].li;
        break;
      }
    }
    if (open) {
      q("details", li).open = q("details", open).open;
      open.replaceWith(li);
    } else {
      list.insertBefore(li, pending.agent);
    }
    if (state === "pending") pending.steps.push({ key: key, li: li });
    if (stick) scrollToEnd();
  }

  // fillStep puts step s's text into the slots of a cloned step line.
  function fillStep(li, s) {
    function set(sel, text) {
      var el = q(sel, li);
      if (el) el.textContent = typeof text === "string" ? text : "";
    }
    // A tool call names its tool and server where an ask names its
    // agent and node.
    set(".step-agent", s.agent_name || s.agent_id || s.name);
    set(".step-host", s.host || s.server);
    var where = q(".step-where", li);
    if (where) where.hidden = !(s.host || s.server);
    set(".step-text", s.text);
    set(".step-question", s.text);
    set(".step-result", s.error || s.reply);
    set(".step-reply", s.error || s.reply);
  }

  // dropPendingSteps removes the lines of steps the turn never finished:
  // the stored conversation does not have them either.
  function dropPendingSteps(p) {
    for (var i = 0; i < p.steps.length; i++) p.steps[i].li.remove();
    p.steps = [];
  }

  function finishPending(f) {
    var p = pending;
    pending = null;
    var stick = nearBottom();
    dropPendingSteps(p);
    showWait(p, -1);
    if (!p.got) {
      var typing = q("[data-testid=typing]", p.agent);
      if (typing) typing.remove();
      p.agent.removeAttribute("aria-busy");
    }
    // The stored reply is authoritative: if a streamed chunk was lost on
    // the way (a relay may drop one under load), show the whole reply.
    dropLive(p);
    if (typeof f.text === "string" && f.text !== p.full) p.textNode.data = f.text;
    // Chunks stream in as plain text; the reply's Markdown, rendered and
    // sanitized by the server (web/markdown), replaces them once it ends.
    if (typeof f.html === "string" && f.html !== "") showMarkdown(p.agent, f.html);
    if (f.message_id) p.agent.setAttribute("data-message-id", String(f.message_id));
    if (f.conversation_id) adoptConversation(f.conversation_id, p.title || p.text);
    addReplyActions(p.agent);
    if (f.approval && typeof f.approval === "object" && typeof f.approval.id === "string") showApproval(p.agent, f.approval);
    // The rendering and the actions make the reply taller: keep its end
    // in view.
    if (stick) scrollToEnd();
    turnEnded();
  }

  // showApproval puts under reply li the card of a tool call waiting for
  // the person's yes or no: the tool, its server, the arguments folded.
  // A click answers it on the socket, and the turn goes on as a new one.
  function showApproval(li, a) {
    var card = clone("approval");
    q("[data-testid=approval-tool]", card).textContent = a.tool || "";
    q("[data-testid=approval-server]", card).textContent = a.server || "";
    q("[data-testid=approval-args]", card).textContent = a.args || "{}";
    function answer(approve) {
      if (refusePending() || !connected()) return;
      var frame = { type: "approval", agent_id: agentId, conversation_id: convId, approval: { id: a.id, approve: approve } };
      if (!transmit(frame)) return;
      card.remove();
      begin(approve ? "Approve" : "Deny", approve ? "Approve" : "Deny");
    }
    q("[data-testid=approval-approve]", card).addEventListener("click", function () { answer(true); });
    q("[data-testid=approval-deny]", card).addEventListener("click", function () { answer(false); });
    li.appendChild(card);
  }

  // addReplyActions puts Copy and Regenerate under finished reply li; the
  // conversation's last reply is the only one Regenerate replaces.
  function addReplyActions(li) {
    dropRegenerate();
    var actions = clone("reply-actions");
    q("input[name=c]", actions).value = convId;
    li.appendChild(actions);
    showCopyButtons(li);
  }

  function dropRegenerate() {
    var old = list.querySelectorAll("[data-testid=regenerate-form]");
    for (var i = 0; i < old.length; i++) old[i].remove();
  }

  // showCopyButtons shows the Copy of each finished reply within el (the
  // page renders them hidden: without this script they could not copy).
  function showCopyButtons(el) {
    var all = el.querySelectorAll("[data-testid=message-copy]");
    for (var i = 0; i < all.length; i++) all[i].hidden = false;
  }

  // copyReply copies the text of the reply whose Copy was pressed, as
  // it reads (line breaks kept).
  function copyReply(btn) {
    var li = btn.closest("[data-testid=message]");
    var body = li && (q("[data-testid=message-markdown]", li) || q(".msg-text", li));
    if (body) copyText(btn, body);
  }

  // showMarkdown puts html, the server's sanitized rendering of a reply,
  // in place of the reply's plain text in bubble li.
  function showMarkdown(li, html) {
    var plain = q(".msg-text", li);
    if (!plain) return;
    var md = clone("markdown");
    md.innerHTML = html;
    plain.replaceWith(md);
    addCopyButtons(md);
  }

  // addCopyButtons gives each code block within el a button that copies
  // its code.
  function addCopyButtons(el) {
    var blocks = el.querySelectorAll(".code-block");
    for (var i = 0; i < blocks.length; i++) {
      if (q("[data-testid=code-copy]", blocks[i])) continue;
      var btn = clone("code-copy");
      btn.addEventListener("click", copyCode);
      blocks[i].insertBefore(btn, blocks[i].firstChild);
    }
  }

  function copyCode(ev) {
    var btn = ev.currentTarget;
    var pre = btn.parentNode.querySelector("pre");
    if (pre) copyText(btn, pre);
  }

  // copyText copies el's text (as it reads: innerText keeps the line
  // breaks of a reply's <br>s and paragraphs) and says so on btn.
  function copyText(btn, el) {
    var label = btn.getAttribute("data-label") || btn.textContent;
    btn.setAttribute("data-label", label);
    var done = function (said) {
      btn.textContent = said;
      setTimeout(function () { btn.textContent = label; }, 1500);
    };
    var text = el.tagName === "PRE" ? el.textContent : el.innerText;
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(
        function () { done("Copied"); },
        function () { selectText(el); done("Press Ctrl+C"); }
      );
    } else {
      selectText(el);
      done("Press Ctrl+C");
    }
  }

  // selectText selects el's text, for copying by hand where the clipboard
  // API is unavailable (an insecure origin) or refused.
  function selectText(el) {
    var r = document.createRange();
    r.selectNodeContents(el);
    var sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(r);
  }

  // failPending ends the turn in flight with error frame f (or a dropped
  // connection): the error line says whether the message was saved and
  // whether the agent got it, and offers to send it again.
  function failPending(f) {
    var p = pending;
    pending = null;
    dropPendingSteps(p);
    if (p.got) {
      p.agent.classList.add("msg-incomplete");
    } else {
      p.agent.remove();
    }
    var stick = nearBottom();
    var line = addMessage(errorLine(f), f.message || "Something went wrong.", f.code);
    q("[data-testid=message-retry]", line).addEventListener("click", function () {
      // A stored message is sent again in place of its exchange; one
      // that was never stored is sent anew.
      if (f.stored === true && convId) retryStored(); else retry(p.raw);
    });
    if (f.stored === false && p.user) {
      // Nothing was kept: the text goes back into the composer.
      p.user.classList.add("msg-unsent");
      p.user.setAttribute("data-unsent", "true");
      if (!input.value) input.value = p.raw;
    } else if (f.stored && f.conversation_id) {
      // The message is stored (with the error, after a failed answer).
      adoptConversation(f.conversation_id, p.text);
    }
    if (stick) scrollToEnd();
    turnEnded();
  }

  // errorLine names the error template for frame f: what became of the
  // message (f.stored, f.sent), or "unknown" when the frame cannot say.
  function errorLine(f) {
    if (f.code === "stopped") return "error-stopped";
    if (f.stored === false) return "error-unsent";
    if (f.stored === true) return f.sent === false ? "error-undelivered" : "error-unanswered";
    return "error-unknown";
  }

  // retry sends a failed message again: the composer's text if it still
  // holds (an edit of) it, else the message as first sent.
  function retry(raw) {
    if (pending) return;
    if (!input.value.trim()) input.value = raw;
    send();
  }

  // retryStored sends the conversation's last message again, in place of
  // its failed or stopped exchange.
  function retryStored() {
    if (refusePending() || !connected()) return;
    var last = lastUserBubble();
    var text = last ? q(".msg-text", last).textContent : "";
    if (!transmit({ type: "retry", agent_id: agentId, conversation_id: convId })) return;
    dropLastExchange();
    begin(text, text);
  }

  function turnEnded() {
    setBusy(false);
  }

  function setBusy(on) {
    sendBtn.disabled = on;
    stopBtn.hidden = !on;
    if (on) list.setAttribute("aria-busy", "true"); else list.removeAttribute("aria-busy");
    if (!on && note.getAttribute("data-kind") === "pending") hideNote();
    refreshEdit();
  }

  // refusePending says why nothing is sent while a reply is on its way.
  function refusePending() {
    if (!pending) return false;
    showNote("A reply is still coming. Stop it first, or wait for it to finish.", "pending");
    return true;
  }

  function connected() {
    if (ws && ws.readyState === WebSocket.OPEN) return true;
    showNote("Not connected right now, so nothing was sent. Your message is still here; send it again once the chat has reconnected.", "connection");
    reconnectNow();
    return false;
  }

  function transmit(frame) {
    try {
      ws.send(JSON.stringify(frame));
      return true;
    } catch (e) {
      showNote("The message could not be sent. It is still here; try again.");
      return false;
    }
  }

  // ---------- Stop, edit ----------

  stopBtn.addEventListener("click", function () {
    if (!pending || !ws || ws.readyState !== WebSocket.OPEN) return;
    var frame = { type: "stop" };
    if (convId) frame.conversation_id = convId;
    transmit(frame);
  });
  // Escape stops a reply on its way, as Stop does (unless Escape is
  // closing something else first: the drawer, a menu).
  document.addEventListener("keydown", function (ev) {
    if (ev.key !== "Escape" || ev.defaultPrevented || !pending || stopBtn.hidden) return;
    if (root.getAttribute("data-drawer") === "open") return;
    ev.preventDefault();
    stopBtn.click();
  });

  function lastUserBubble() {
    var all = list.querySelectorAll("[data-testid=message][data-role=user]:not([data-unsent])");
    return all.length ? all[all.length - 1] : null;
  }

  // dropLastExchange removes the last message of the person's and all that
  // followed (a retry or an edit replaces them).
  function dropLastExchange() {
    var last = lastUserBubble();
    if (!last) return;
    while (last.nextSibling) last.nextSibling.remove();
    last.remove();
  }

  // refreshEdit offers Edit on the person's last stored message, when no
  // reply is on its way.
  function refreshEdit() {
    var all = list.querySelectorAll("[data-testid=message-edit]");
    for (var i = 0; i < all.length; i++) all[i].hidden = true;
    var last = lastUserBubble();
    if (!pending && convId && last) {
      var b = q("[data-testid=message-edit]", last);
      if (b) b.hidden = false;
    }
  }

  function setEditing(on) {
    editing = on;
    editingEl.hidden = !on;
  }

  list.addEventListener("click", function (ev) {
    var c = ev.target.closest("[data-testid=message-copy]");
    if (c) {
      copyReply(c);
      return;
    }
    var b = ev.target.closest("[data-testid=message-edit]");
    if (!b) return;
    if (refusePending()) return;
    var li = b.closest("[data-testid=message]");
    input.value = q(".msg-text", li).textContent;
    setEditing(true);
    input.focus();
  });
  q("[data-testid=composer-edit-cancel]", form).addEventListener("click", function () {
    setEditing(false);
    input.value = "";
  });
  // Try again on a stored failure, and Regenerate on the last reply
  // (forms without JavaScript).
  list.addEventListener("submit", function (ev) {
    if (!ev.target.matches(".retry-form")) return;
    ev.preventDefault();
    retryStored();
  });
  // Starter prompts fill the composer (links without JavaScript).
  root.addEventListener("click", function (ev) {
    var a = ev.target.closest("[data-testid=starter-prompt]");
    if (!a) return;
    ev.preventDefault();
    input.value = a.getAttribute("data-prompt") || a.textContent;
    input.focus();
  });

  // ---------- Sending ----------

  function send() {
    if (refusePending()) return;
    var raw = input.value;
    var text = raw.trim();
    if (!text) return;
    if (!connected()) return;
    var edit = editing && convId;
    var frame = { type: edit ? "edit" : "message", agent_id: agentId, text: raw };
    if (convId) frame.conversation_id = convId;
    if (!transmit(frame)) return;
    input.value = "";
    if (edit) dropLastExchange();
    setEditing(false);
    begin(text, raw);
  }

  // begin shows a turn just sent: the person's message and the agent's
  // bubble, with the typing indicator.
  function begin(text, raw) {
    hideNote();
    var empty = q("[data-testid=messages-empty]");
    if (empty) empty.remove();
    // A retry is about the latest failure only; Regenerate about the
    // latest reply.
    var old = list.querySelectorAll("[data-testid=message-retry]");
    for (var i = 0; i < old.length; i++) (old[i].closest("form") || old[i]).remove();
    // A waiting tool call is answered by this message, or dropped by it.
    list.querySelectorAll("[data-testid=approval-card]").forEach(function (c) { c.remove(); });
    dropRegenerate();
    var user = addMessage("user", text);
    var agentMsg = addMessage("agent", ""); // with the typing indicator, aria-busy
    var textNode = document.createTextNode("");
    q(".msg-text", agentMsg).appendChild(textNode);
    pending = {
      user: user,
      agent: agentMsg,
      textNode: textNode,
      full: "",
      live: null,
      text: text,
      raw: raw,
      title: "",
      got: false,
      steps: [],
      started: false
    };
    setBusy(true);
    scrollToEnd();
  }

  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    send();
  });
  // Some input paths (synthetic key events, a few virtual keyboards) deliver
  // the Enter character separately from its keydown; keep it out too.
  input.addEventListener("keypress", function (ev) {
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) ev.preventDefault();
  });

  input.addEventListener("keydown", function (ev) {
    // Enter sends; Shift+Enter is a new line; Enter that confirms an IME
    // composition (keyCode 229) is not a send.
    if (ev.key !== "Enter" || ev.shiftKey || ev.isComposing || ev.keyCode === 229) return;
    ev.preventDefault();
    send();
  });

  // showNote explains, above the composer, why nothing was sent.
  function showNote(text, kind) {
    note.textContent = text;
    note.setAttribute("data-kind", kind || "send");
    note.hidden = false;
  }

  function hideNote() {
    note.hidden = true;
    note.textContent = "";
    note.removeAttribute("data-kind");
  }

  // ---------- Messages ----------

  // clone is a copy of the page's <template data-template=name>: markup
  // the server rendered with the components of the stored page.
  function clone(name) {
    var el = q("template[data-template=\"" + name + "\"]").content.firstElementChild.cloneNode(true);
    var t = q("[data-testid=message-time]", el);
    if (t && !t.getAttribute("datetime")) stampTime(t, new Date());
    return el;
  }

  // stampTime shows when a message was sent, in the reader's time zone:
  // the hour and minute, the full date in the tooltip.
  function stampTime(t, d) {
    t.setAttribute("datetime", d.toISOString());
    t.title = d.toLocaleString([], { dateStyle: "full", timeStyle: "short" });
    t.textContent = d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
    t.hidden = false;
  }
  list.querySelectorAll("[data-testid=message-time][datetime]").forEach(function (t) {
    var d = new Date(t.getAttribute("datetime"));
    if (!isNaN(d.getTime())) stampTime(t, d);
  });

  // addMessage appends a bubble from template name (user, agent, error-…)
  // holding text, and returns it.
  function addMessage(name, text, code) {
    var stick = nearBottom();
    var li = clone(name);
    if (code) li.setAttribute("data-code", code);
    q(".msg-text", li).textContent = text;
    list.appendChild(li);
    if (stick) scrollToEnd();
    return li;
  }

  function nearBottom() {
    return scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 80;
  }

  function scrollToEnd() {
    scroller.scrollTop = scroller.scrollHeight;
  }

  // ---------- Conversations ----------

  // adoptConversation makes id the page's conversation: the next message
  // continues it, a reload shows it, and the side list has it on top.
  function adoptConversation(id, firstText) {
    convId = id;
    root.setAttribute("data-conversation-id", id);
    convField.value = id;
    var url = "/chat/" + encodeURIComponent(agentId) + "?c=" + encodeURIComponent(id);
    if (location.pathname + location.search !== url) {
      history.replaceState(history.state, "", url);
    }
    var item = null;
    var items = convList.querySelectorAll("[data-testid=conversation]");
    for (var i = 0; i < items.length; i++) {
      var it = items[i];
      var cur = it.getAttribute("data-conversation-id") === id;
      if (cur) item = it;
      it.classList.toggle("current", cur);
      it.setAttribute("data-current", cur ? "true" : "false");
      var a = q("a", it);
      if (cur) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
    }
    if (!item) {
      item = clone("conversation");
      item.setAttribute("data-conversation-id", id);
      q("a", item).setAttribute("href", url);
      q(".conv-title", item).textContent = title(firstText) || agentName;
    }
    var when = q("time", item);
    when.textContent = "just now";
    when.setAttribute("datetime", new Date().toISOString());
    convList.insertBefore(item, convList.firstChild);
    var empty = q("[data-testid=conversations-empty]");
    if (empty) empty.remove();
    var fresh = q("[data-testid=new-conversation]");
    fresh.classList.remove("current");
    fresh.removeAttribute("aria-current");
  }

  // title is the server's conversation title (handlers/chat.go title): the
  // first words, at most 60 characters.
  function title(text) {
    var t = text.split(/\s+/).filter(Boolean).join(" ");
    var chars = Array.from(t);
    if (chars.length > 60) t = chars.slice(0, 59).join("") + "…";
    return t;
  }

  // ---------- Start ----------

  // A reply on its way when the page was rendered: take it over; the
  // socket attaches to the rest once open.
  var live = q("[data-testid=message][data-live=true]", list);
  if (live && convId) {
    var liveText = q(".msg-text", live);
    var liveNode = document.createTextNode(liveText.textContent);
    liveText.textContent = "";
    liveText.appendChild(liveNode);
    pending = {
      user: lastUserBubble(),
      agent: live,
      textNode: liveNode,
      full: liveNode.data,
      live: null,
      text: "",
      raw: "",
      got: liveNode.data !== "",
      steps: [],
      started: true
    };
    setBusy(true);
  } else {
    refreshEdit();
  }
  // A tool call still waiting for the person when the page was rendered:
  // its card again, under the reply that asked.
  var waiting = q("[data-testid=message][data-approval]", list);
  if (waiting && !pending) {
    try { showApproval(waiting, JSON.parse(waiting.getAttribute("data-approval"))); } catch (e) { /* not shown */ }
  }
  addCopyButtons(list);
  showCopyButtons(list);
  drawer();
  fitViewport();
  scrollToEnd();
  connect();

  // ---------- Phone layout ----------

  // drawer makes the side list a drawer on a narrow screen (CSS, under
  // data-drawer): the header's button opens it; Escape, the scrim or its
  // close button shuts it, and the focus goes back to the button.
  function drawer() {
    var toggle = q("[data-testid=conversations-toggle]");
    var side = q("[data-testid=chat-side]");
    var scrim = q("[data-testid=conversations-scrim]");
    var close = q("[data-testid=conversations-close]");
    if (!toggle || !side) return;
    root.setAttribute("data-drawer", "closed");
    var behind = q(".chat-main");
    function set(open, focusBack) {
      root.setAttribute("data-drawer", open ? "open" : "closed");
      // While open, the drawer is all there is: Tab stays in it.
      if (behind) behind.inert = open;
      toggle.setAttribute("aria-expanded", open ? "true" : "false");
      scrim.hidden = !open;
      if (open) {
        var first = q("[aria-current=page]", side) || q("a, button", side);
        if (first) first.focus();
      } else if (focusBack) {
        toggle.focus();
      }
    }
    toggle.addEventListener("click", function () { set(root.getAttribute("data-drawer") !== "open", false); });
    scrim.addEventListener("click", function () { set(false, true); });
    close.addEventListener("click", function () { set(false, true); });
    document.addEventListener("keydown", function (ev) {
      if (ev.key === "Escape" && root.getAttribute("data-drawer") === "open") set(false, true);
    });
  }

  // fitViewport keeps the chat, composer included, inside what the
  // screen shows: on a phone the open keyboard shrinks the visual
  // viewport, not the layout one, so the chat's height follows
  // visualViewport (custom properties set from script; the CSP allows no
  // inline style attribute, but this is the CSSOM).
  function fitViewport() {
    var vv = window.visualViewport;
    function fit() {
      var top = Math.max(0, root.getBoundingClientRect().top);
      var height = vv ? vv.height + vv.offsetTop : window.innerHeight;
      root.style.setProperty("--chat-top", top + "px");
      root.style.setProperty("--chat-height", Math.max(240, height - top) + "px");
    }
    fit();
    if (vv) {
      vv.addEventListener("resize", fit);
      vv.addEventListener("scroll", fit);
    }
    window.addEventListener("resize", fit);
    window.addEventListener("scroll", fit, { passive: true });
  }
})();
