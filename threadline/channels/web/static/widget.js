/*
 * Threadline's chat widget: one <script> tag opens a chat panel on any page.
 *
 *   <script src="https://chat.example.com/widget.js" async
 *           data-identity="SIGNED_JWT_OR_NOTHING" data-theme="auto" data-open="false"></script>
 *
 * Plain JavaScript, no build step. It talks to the server it was loaded from: POST
 * /api/session (who the visitor is), POST /api/messages (one message, with files), and
 * GET /api/events (Server-Sent Events: the stored turns, and replies as they are written).
 * Every message is keyed by its id, so a reply heard again after a reconnect is shown once.
 * Feedback buttons (a `feedback` event) go under the reply they rate; a press is sent as the
 * visitor's message (the button's `/feedback up|down ID` command), and shows as pressed.
 * Nothing a message says is ever parsed as HTML: Markdown is turned into DOM nodes whose text
 * is set with textContent, and links go to http(s) and mailto only.
 */
(function () {
  "use strict";
  var script = document.currentScript;
  if (!script || window.threadlineWidget) { return; }
  var base = script.src.replace(/\/widget\.js(\?.*)?$/, "");
  var said = script.dataset || {};
  var OPEN_KEY = "threadline-widget-open";

  var CSS = [
    ":host{all:initial}",
    ".tl{--bg:#fff;--fg:#1b1f24;--muted:#5b6470;--line:#d5dae0;--mine:#1f6feb;--mine-fg:#fff;",
    "--theirs:#eef1f4;--focus:#0b57d0;font:15px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;color:var(--fg)}",
    "@media (prefers-color-scheme:dark){.tl[data-theme=auto]{--bg:#16191d;--fg:#e8eaed;--muted:#a0a8b3;",
    "--line:#333a42;--mine:#3b82f6;--theirs:#262b31;--focus:#8ab4f8}}",
    ".tl[data-theme=dark]{--bg:#16191d;--fg:#e8eaed;--muted:#a0a8b3;--line:#333a42;--mine:#3b82f6;--theirs:#262b31;--focus:#8ab4f8}",
    ".launcher{position:fixed;right:20px;bottom:20px;width:56px;height:56px;border-radius:50%;border:0;",
    "background:var(--mine);color:var(--mine-fg);font-size:24px;cursor:pointer;box-shadow:0 4px 14px rgba(0,0,0,.25);z-index:2147483646}",
    "button:focus-visible,textarea:focus-visible{outline:3px solid var(--focus);outline-offset:2px}",
    ".panel{position:fixed;right:20px;bottom:88px;width:380px;max-width:calc(100vw - 24px);height:560px;",
    "max-height:calc(100vh - 110px);box-sizing:border-box;display:flex;flex-direction:column;background:var(--bg);color:var(--fg);",
    "border:1px solid var(--line);border-radius:14px;box-shadow:0 10px 30px rgba(0,0,0,.3);overflow:hidden;z-index:2147483647}",
    ".panel[hidden]{display:none}",
    "@media (max-width:520px){.panel{right:0;bottom:0;width:100%;max-width:100%;height:100%;max-height:100%;border:0;border-radius:0}}",
    "header{display:flex;align-items:center;gap:8px;padding:10px 12px;border-bottom:1px solid var(--line)}",
    "h2{font-size:16px;margin:0;flex:1}",
    "header button{background:none;border:1px solid var(--line);color:var(--fg);border-radius:8px;padding:4px 8px;cursor:pointer;font:inherit;font-size:13px}",
    ".status{font-size:12px;color:var(--muted);padding:0 12px}",
    "ol{list-style:none;margin:0;padding:12px;flex:1;overflow-y:auto;display:flex;flex-direction:column;gap:8px}",
    "li{max-width:85%;padding:8px 11px;border-radius:12px;background:var(--theirs);overflow-wrap:anywhere}",
    "li.visitor{align-self:flex-end;background:var(--mine);color:var(--mine-fg)}",
    "li.visitor a{color:inherit}",
    "li.pending{opacity:.7}li.failed{outline:2px solid #d93025}",
    "li .who{display:block;font-size:12px;color:var(--muted);margin-bottom:2px}",
    "li.streaming .body::after{content:'\\258D';animation:blink 1s steps(2) infinite}",
    "@keyframes blink{50%{opacity:0}}",
    ".body p{margin:0 0 6px}.body p:last-child{margin:0}.body pre{overflow-x:auto;background:rgba(0,0,0,.08);padding:6px;border-radius:6px}",
    ".body code{font-family:ui-monospace,monospace;font-size:13px}.body ul,.body ol{margin:0 0 6px;padding-left:20px;display:block}",
    ".body li{background:none;padding:0;max-width:none}",
    ".files{display:flex;flex-wrap:wrap;gap:4px;margin-top:4px;font-size:12px}",
    ".files img{max-width:160px;max-height:120px;border-radius:6px}",
    ".typing{font-size:13px;color:var(--muted);padding:0 12px 6px;min-height:18px}",
    "form{display:flex;flex-wrap:wrap;gap:6px;align-items:flex-end;padding:10px;border-top:1px solid var(--line)}",
    "textarea{flex:1;min-height:38px;max-height:120px;resize:none;border:1px solid var(--line);border-radius:10px;padding:8px;",
    "background:var(--bg);color:var(--fg);font:inherit}",
    "form button{border:0;border-radius:10px;padding:9px 12px;background:var(--mine);color:var(--mine-fg);cursor:pointer;font:inherit}",
    "form button.attach{background:var(--theirs);color:var(--fg)}",
    ".picked{width:100%;font-size:12px;color:var(--muted)}",
    ".rate{display:flex;gap:4px;margin-top:4px}",
    ".rate button{background:none;border:1px solid var(--line);border-radius:8px;padding:2px 8px;cursor:pointer;font:inherit;color:inherit}",
    ".rate button[aria-pressed=true]{background:var(--mine);color:var(--mine-fg);border-color:var(--mine)}",
    ".hidden-label{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}"
  ].join("\n");

  function el(tag, props, children) {
    var node = document.createElement(tag);
    Object.keys(props || {}).forEach(function (key) {
      if (key === "text") { node.textContent = props[key]; }
      else if (key === "className") { node.className = props[key]; }
      else { node.setAttribute(key, props[key]); }
    });
    (children || []).forEach(function (child) { node.appendChild(child); });
    return node;
  }

  // -- Markdown, safely: DOM nodes only, text through textContent ---------------------------
  var INLINE = /(`[^`\n]+`)|(\*\*[^*\n]+\*\*)|(\*[^*\n]+\*|_[^_\n]+_)|\[([^\]\n]+)\]\(((?:https?:\/\/|mailto:)[^\s)]+)\)|((?:https?:\/\/)[^\s<>()]+)/g;

  function link(href, label) {
    var a = el("a", {text: label, target: "_blank", rel: "noopener noreferrer nofollow"});
    a.href = href;  // only http(s) and mailto reach here (the pattern allows no other scheme)
    return a;
  }

  function inline(text, into) {
    var last = 0;
    text.replace(INLINE, function (match, code, bold, em, label, href, bare, at) {
      if (at > last) { into.appendChild(document.createTextNode(text.slice(last, at))); }
      if (code) { into.appendChild(el("code", {text: code.slice(1, -1)})); }
      else if (bold) { into.appendChild(el("strong", {text: bold.slice(2, -2)})); }
      else if (em) { into.appendChild(el("em", {text: em.slice(1, -1)})); }
      else if (label) { into.appendChild(link(href, label)); }
      else if (bare) { into.appendChild(link(bare, bare)); }
      last = at + match.length;
      return match;
    });
    if (last < text.length) { into.appendChild(document.createTextNode(text.slice(last))); }
  }

  function lines(text, into) {
    text.split("\n").forEach(function (line, i) {
      if (i) { into.appendChild(el("br")); }
      inline(line, into);
    });
  }

  function paragraph(block, into) {
    var rows = block.split("\n");
    var bullet = /^\s*[-*+]\s+/, numbered = /^\s*\d+[.)]\s+/;
    var kind = rows.every(function (r) { return bullet.test(r); }) ? "ul" :
      rows.every(function (r) { return numbered.test(r); }) ? "ol" : null;
    if (kind) {
      var list = el(kind);
      rows.forEach(function (r) {
        var item = el("li");
        inline(r.replace(kind === "ul" ? bullet : numbered, ""), item);
        list.appendChild(item);
      });
      into.appendChild(list);
      return;
    }
    var heading = /^#{1,6}\s+/.test(rows[0]);
    var p = el("p");
    if (heading) {
      var strong = el("strong");
      inline(rows.shift().replace(/^#{1,6}\s+/, ""), strong);
      p.appendChild(strong);
      if (rows.length) { p.appendChild(el("br")); }
    }
    lines(rows.join("\n"), p);
    into.appendChild(p);
  }

  function markdown(text, into) {
    var parts = text.split(/```[^\n]*\n?/);
    parts.forEach(function (part, i) {
      if (i % 2 === 1) { into.appendChild(el("pre", {}, [el("code", {text: part.replace(/\n$/, "")})])); return; }
      part.split(/\n\s*\n/).forEach(function (block) {
        if (block.trim()) { paragraph(block.replace(/^\n+|\n+$/g, ""), into); }
      });
    });
  }

  // -- the panel --------------------------------------------------------------------------
  var host = el("div", {"data-threadline-widget": ""});
  var root = host.attachShadow({mode: "open"});
  if (root.adoptedStyleSheets !== undefined && window.CSSStyleSheet && CSSStyleSheet.prototype.replaceSync) {
    var sheet = new CSSStyleSheet();
    sheet.replaceSync(CSS);
    root.adoptedStyleSheets = [sheet];
  } else {
    root.appendChild(el("style", {text: CSS}));
  }
  var title = el("h2", {id: "tl-title", text: said.title || "Chat"});
  var status = el("div", {className: "status", role: "status", "aria-live": "polite"});
  var human = el("button", {type: "button", className: "human", text: "Talk to a person"});
  var close = el("button", {type: "button", className: "close", "aria-label": "Close chat", text: "\u00d7"});
  var log = el("ol", {role: "log", "aria-live": "polite", "aria-label": "Conversation"});
  var typing = el("div", {className: "typing", "aria-live": "polite"});
  var picked = el("div", {className: "picked"});
  var text = el("textarea", {id: "tl-text", rows: "1", placeholder: "Write a message\u2026"});
  var fileInput = el("input", {type: "file", multiple: "", hidden: "", accept: "image/*,application/pdf,text/*,audio/*"});
  var attach = el("button", {type: "button", className: "attach", "aria-label": "Attach a file", text: "\ud83d\udcce"});
  var sendButton = el("button", {type: "submit", className: "send", text: "Send"});
  var form = el("form", {}, [picked, el("label", {className: "hidden-label", "for": "tl-text", text: "Message"}),
    text, fileInput, attach, sendButton]);
  var panel = el("section", {className: "panel", role: "dialog", "aria-labelledby": "tl-title", hidden: ""},
    [el("header", {}, [title, human, close]), status, log, typing, form]);
  var launcher = el("button", {type: "button", className: "launcher", "aria-label": "Open chat",
    "aria-expanded": "false", text: "\ud83d\udcac"});
  var frame = el("div", {className: "tl", "data-theme": said.theme || "auto"}, [panel, launcher]);
  root.appendChild(frame);

  function setOpen(open) {
    panel.hidden = !open;
    launcher.setAttribute("aria-expanded", String(open));
    launcher.setAttribute("aria-label", open ? "Close chat" : "Open chat");
    try { sessionStorage.setItem(OPEN_KEY, open ? "1" : ""); } catch (e) { /* storage off */ }
    if (open) { text.focus(); log.scrollTop = log.scrollHeight; } else { launcher.focus(); }
  }
  launcher.addEventListener("click", function () { setOpen(panel.hidden); });
  close.addEventListener("click", function () { setOpen(false); });
  panel.addEventListener("keydown", function (e) { if (e.key === "Escape") { setOpen(false); } });

  function say(words) { status.textContent = words || ""; }

  // -- messages, keyed by id ---------------------------------------------------------------
  var shown = new Map();     // id -> {li, body}
  var stored = new Set();    // ids of stored turns (a late draft of one is ignored)
  var working = new Map();   // reply id -> "support is typing..."
  var visitor = null;
  var lastSeq = 0;
  var firstTextMarked = new Set();

  function bubble(id, from, name) {
    var item = shown.get(id);
    if (item) { return item; }
    var body = el("div", {className: "body"});
    var li = el("li", {className: from, "data-id": id}, [el("span", {className: "who", text: from === "visitor" ? "You" : name}), body]);
    log.appendChild(li);
    item = {li: li, body: body};
    shown.set(id, item);
    if (offered.has(id)) { rate(item, offered.get(id)); }
    return item;
  }

  // -- feedback buttons under a reply -------------------------------------------------------
  var offered = new Map();   // reply id -> the choices offered under it
  var votes = new Map();     // the rated reply's id in the command -> "up" | "down" (the last press)
  var groups = new Map();    // the same id -> its buttons
  function showVote(rated) {
    (groups.get(rated) || []).forEach(function (b) { b.setAttribute("aria-pressed", String(b.dataset.vote === votes.get(rated))); });
  }

  function rate(item, choices) {
    var old = item.li.querySelector(".rate");
    if (old) { old.remove(); }
    var rated = choices.length ? choices[0].command.split(" ")[2] : "";
    var buttons = choices.map(function (choice) {
      var vote = choice.command.split(" ")[1];
      var b = el("button", {type: "button", "aria-pressed": "false", "data-vote": vote, text: choice.label,
        "aria-label": vote === "up" ? "Good reply" : "Bad reply"});
      b.addEventListener("click", function () {
        votes.set(rated, vote);
        showVote(rated);
        press(choice.command);
      });
      return b;
    });
    groups.set(rated, buttons);
    showVote(rated);
    item.li.appendChild(el("div", {className: "rate", role: "group", "aria-label": "Rate this reply"}, buttons));
  }

  function onPressed(said) {
    var words = said.command.split(" ");
    votes.set(words[2], words[1]);
    showVote(words[2]);
  }

  function onFeedback(offer) {
    offered.set(offer.id, offer.choices);
    var item = shown.get(offer.id);
    if (item) { rate(item, offer.choices); }
  }

  function fill(item, words, files) {
    item.body.replaceChildren();
    markdown(words || "", item.body);
    if (files && files.length) {
      item.body.appendChild(el("div", {className: "files"}, files.map(function (f) {
        if (!f.url) { return el("span", {text: "\ud83d\udcce " + f.name + (f.note ? " (" + f.note + ")" : "")}); }
        var a = el("a", {download: f.name, target: "_blank", rel: "noopener noreferrer"});
        a.href = base + f.url;  // our own server's route, only ever a download or a picture
        if (f.kind === "image") {
          var img = el("img", {alt: f.name});
          img.src = base + f.url;
          a.appendChild(img);
        } else {
          a.textContent = "\ud83d\udcce " + f.name;
        }
        return a;
      })));
    }
    log.scrollTop = log.scrollHeight;
  }

  function showTyping() {
    typing.textContent = Array.from(working.values()).join(" ");
  }

  function onTurn(turn) {
    if (turn.seq > lastSeq) { lastSeq = turn.seq; }
    stored.add(turn.id);
    working.delete(turn.id);
    showTyping();
    var item = bubble(turn.id, turn.from, turn.name);
    item.li.classList.remove("pending", "streaming");
    if (!(turn.from === "visitor" && item.li.dataset.local)) { fill(item, turn.text, turn.files); }
  }

  function onReply(kind, reply) {
    if (stored.has(reply.id)) { return; }
    if (kind === "status") {
      working.set(reply.id, reply.agent + (reply.activity ? " is using " + reply.activity + "\u2026" : " is typing\u2026"));
    } else if (kind === "closed") {
      working.delete(reply.id);
      var gone = shown.get(reply.id);
      if (gone && !stored.has(reply.id)) { gone.li.remove(); shown.delete(reply.id); }
    } else {
      working.delete(reply.id);
      var item = bubble(reply.id, "agent", reply.agent);
      item.li.classList.toggle("streaming", kind === "draft");
      fill(item, reply.text);
      if (reply.text && !firstTextMarked.has(reply.id) && window.performance && performance.mark) {
        firstTextMarked.add(reply.id);
        performance.mark("threadline:first-text:" + reply.id);
      }
    }
    showTyping();
  }

  // -- the stream -------------------------------------------------------------------------
  var source = null;
  function connect() {
    if (source) { source.close(); }
    source = new EventSource(base + "/api/events" + (lastSeq ? "?after=" + lastSeq : ""), {withCredentials: true});
    source.addEventListener("turn", function (e) { onTurn(JSON.parse(e.data)); });
    ["status", "draft", "posted", "closed"].forEach(function (kind) {
      source.addEventListener(kind, function (e) { onReply(kind, JSON.parse(e.data)); });
    });
    source.addEventListener("feedback", function (e) { onFeedback(JSON.parse(e.data)); });
    source.addEventListener("pressed", function (e) { onPressed(JSON.parse(e.data)); });
    source.addEventListener("removed", function (e) {
      JSON.parse(e.data).ids.forEach(function (id) {
        var item = shown.get(id);
        if (item) { item.li.remove(); shown.delete(id); }
      });
    });
    source.addEventListener("ready", function () { say(""); frame.setAttribute("data-ready", "true"); });
    source.onerror = function () {
      say("Reconnecting\u2026");
      if (source.readyState === EventSource.CLOSED) { setTimeout(connect, 1500); }
    };
  }

  // -- sending ----------------------------------------------------------------------------
  function newId() {
    if (window.crypto && crypto.randomUUID) { return crypto.randomUUID(); }
    var bytes = new Uint8Array(16);
    crypto.getRandomValues(bytes);
    return Array.from(bytes, function (b) { return ("0" + b.toString(16)).slice(-2); }).join("");
  }

  function post(clientId, words, files, attempt) {
    var form = new FormData();
    form.append("id", clientId);
    form.append("text", words);
    files.forEach(function (f) { form.append("file", f, f.name); });
    var id = "web:" + visitor + ":" + clientId;
    var again = function (seconds) {
      if (attempt >= 60) { return failed(id, "not sent: the chat cannot be reached; try again later"); }
      say("Sending again\u2026");
      setTimeout(function () { post(clientId, words, files, attempt + 1); }, seconds * 1000);
    };
    if (window.performance && performance.mark && !attempt) { performance.mark("threadline:sent:" + id); }
    fetch(base + "/api/messages", {method: "POST", body: form, credentials: "include"}).then(function (r) {
      if (r.status === 202) { say(""); return; }
      if (r.status === 503 || r.status === 429 && attempt < 5) {
        return again(Number(r.headers.get("Retry-After")) || 1);
      }
      return r.json().then(function (e) { failed(id, e.error); }, function () { failed(id, "not sent (" + r.status + ")"); });
    }, function () { again(Math.min(1 + attempt, 3)); });
  }

  function press(command) {
    if (visitor) { post(newId(), command, [], 0); }  // not shown as a message: the button shows it
  }

  function failed(id, why) {
    var item = shown.get(id);
    if (item) { item.li.classList.add("failed"); item.li.classList.remove("pending"); }
    say(why);
  }

  function send(words, files) {
    if (!visitor || (!words.trim() && !files.length)) { return; }
    var clientId = newId();
    var id = "web:" + visitor + ":" + clientId;
    var item = bubble(id, "visitor", "You");
    item.li.classList.add("pending");
    item.li.dataset.local = "1";
    fill(item, words);
    if (files.length) {
      item.body.appendChild(el("div", {className: "files"}, files.map(function (f) {
        if (/^image\//.test(f.type)) {
          var img = el("img", {alt: f.name});
          img.src = URL.createObjectURL(f);
          return img;
        }
        return el("span", {text: "\ud83d\udcce " + f.name});
      })));
    }
    post(clientId, words, files, 0);
  }

  var chosen = [];
  attach.addEventListener("click", function () { fileInput.click(); });
  fileInput.addEventListener("change", function () {
    chosen = Array.from(fileInput.files || []);
    picked.textContent = chosen.map(function (f) { return f.name; }).join(", ");
  });
  form.addEventListener("submit", function (e) {
    e.preventDefault();
    send(text.value, chosen);
    text.value = "";
    chosen = [];
    fileInput.value = "";
    picked.textContent = "";
  });
  text.addEventListener("keydown", function (e) {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); form.requestSubmit(); }
  });
  human.addEventListener("click", function () { send("/human", []); });

  // -- start: who the visitor is, then the stream -----------------------------------------
  function start() {
    fetch(base + "/api/session", {method: "POST", credentials: "include",
      headers: {"Content-Type": "application/json"},
      body: JSON.stringify(said.identity ? {identity: said.identity} : {})}).then(function (r) {
      return r.json().then(function (answer) {
        if (r.status !== 200) { say(answer.error || "the chat could not be opened"); frame.setAttribute("data-refused", "true"); return; }
        visitor = answer.visitor;
        if (!said.title && answer.title) { title.textContent = answer.title; }
        connect();
      });
    }, function () { say("The chat cannot be reached; retrying\u2026"); setTimeout(start, 2000); });
  }

  (document.body || document.documentElement).appendChild(host);
  var wasOpen = false;
  try { wasOpen = sessionStorage.getItem(OPEN_KEY) === "1"; } catch (e) { /* storage off */ }
  if (said.open === "true" || wasOpen) { setOpen(true); }
  window.threadlineWidget = {root: root, send: function (words) { send(words, []); }};
  start();
})();
