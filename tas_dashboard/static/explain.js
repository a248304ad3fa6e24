// Click a pod chip or a node's name: why the pod runs where it does and whether the descheduler
// would move it now, or what the node looks like to every policy. The same explanation as
// `tas explain` (built once, by tas_explain.explain), read from /api/explain/... (docs/explain.md).
// Clicks are caught on the document, so chips the page re-renders need no hook of their own.
(() => {
  "use strict";

  const style = document.createElement("style");
  style.textContent = `
    [data-pod], .node-name { cursor: pointer; }
    .node-name:hover, [data-pod]:hover { text-decoration: underline; }
    #explain { position: fixed; top: 4vh; right: 2vw; width: min(760px, 94vw); max-height: 90vh;
      overflow: auto; background: #fff; color: #1b1f24; border: 1px solid #8c959f;
      border-radius: 8px; box-shadow: 0 8px 28px rgba(0,0,0,.25); padding: 14px 18px 18px;
      z-index: 1000; font-size: 13px; line-height: 1.45; }
    #explain h2 { margin: 0 28px 6px 0; font-size: 16px; overflow-wrap: anywhere; }
    #explain h3 { margin: 12px 0 4px; font-size: 13px; }
    #explain .close { position: absolute; top: 8px; right: 10px; border: 0; background: none;
      font-size: 20px; cursor: pointer; }
    #explain table { border-collapse: collapse; width: 100%; }
    #explain td, #explain th { text-align: left; padding: 2px 6px; vertical-align: top;
      border-bottom: 1px solid #eaeef2; overflow-wrap: anywhere; }
    #explain .yes { color: #b3261e; font-weight: 600; }
    #explain .no { color: #1a7f37; font-weight: 600; }
    #explain .fail { color: #b3261e; }
    #explain .here { font-weight: 600; }
    #explain .nowrap { white-space: nowrap; overflow-wrap: normal; }
    #explain .missing { color: #9a6700; }
    #explain ul { margin: 2px 0; padding-left: 18px; }
  `;
  document.head.append(style);

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value !== null && value !== undefined) node.setAttribute(key, value);
    }
    for (const child of children.flat()) {
      if (child !== null && child !== undefined && child !== false) {
        node.append(child instanceof Node ? child : String(child));
      }
    }
    return node;
  }

  // On the page's one clock, 24-hour, as the log and the header (app.js clockTime).
  const when = (t) => (t ? clockTime(t) : "unknown time");
  const age = (s) => (s === null || s === undefined ? "no fresh value" : `${s.toFixed(1)}s old`);

  function verdictText(v, on) {
    const where = on ? ` on ${on}` : "";
    if (v.verdict === "score") {
      return withPercents(`score ${v.score}/10${where}, rank ${v.rank} of ${v.of}: ${v.detail}`);
    }
    return withPercents(`${v.verdict}${where}: ${v.detail}`);
  }

  function verdictRows(verdicts, on, withPolicy) {
    return el("table", {}, verdicts.map((v) => el("tr", { "data-strategy": v.strategy },
      withPolicy ? el("td", {}, v.policy) : null,
      el("td", { class: "nowrap" }, v.strategy),
      el("td", { class: v.verdict === "violates" ? "fail" : "" }, verdictText(v, on)))));
  }

  function evictionList(evictions) {
    if (!evictions.length) return el("p", { class: "muted" }, "none");
    return el("ul", {}, evictions.map((e) =>
      el("li", {}, `${when(e.time)} ${e.pod} (${e.strategy}): ${withPercents(e.message)}`)));
  }

  function missingList(missing) {
    if (!missing.length) return null;
    return [el("h3", {}, "Not explained (could not be read)"),
      el("ul", { class: "missing" }, missing.map((m) => el("li", {}, m)))];
  }

  function podBody(x) {
    if (x.phase === "Gone") {
      return [el("p", {}, "No longer exists: the descheduler evicted it (its owner made a new pod in its place)."),
        el("h3", {}, "Evicted"), evictionList(x.evictions), missingList(x.missing)];
    }
    const policy = x.policyLabel === null
      ? el("p", {}, "No telemetry-policy label: every node passes the extender and scores alike.")
      : !x.policyFound
        ? el("p", {}, `Its policy ${x.namespace}/${x.policyLabel} does not exist: every node passes.`)
        : [el("p", {}, `${x.namespace}/${x.policyLabel}`), verdictRows(x.policies, x.node, false)];
    const p = x.placement;
    const placement = p === null
      ? el("p", { class: "muted" }, "No decision for this pod in the extender's log (it keeps only the most recent).")
      : [el("p", { class: "muted" }, `extender, ${when(p.filterTime || p.prioritizeTime)}` +
          (p.outcome !== "applied" ? `: every node passed (${p.outcome}: ${p.reason})` : "")),
        el("table", {}, el("tr", {}, el("th", {}, "node"), el("th", {}, "filter"), el("th", {}, "score"), el("th", {}, "why")),
          p.candidates.map((c) => el("tr", { "data-candidate": c.node, class: c.node === x.node ? "here" : "" },
            el("td", {}, c.node + (c.node === x.node ? " (runs here)" : "")),
            el("td", { class: c.verdict === "fail" ? "fail" : "" }, c.verdict === null ? "-" : c.verdict === "pass" ? "kept" : "filtered out"),
            el("td", {}, c.score === null ? "-" : c.score),
            el("td", {}, c.reason ? withPercents(c.reason) : Object.entries(c.metrics).map(([m, v]) => `${m} ${metricValue(m, v)}`).join(", ")))))];
    const move = x.move === null
      ? el("p", { class: "muted" }, "not evaluated")
      : [el("p", { "data-move": x.move.wouldMove ? "yes" : "no" },
          el("span", { class: x.move.wouldMove ? "yes" : "no" }, x.move.wouldMove ? "Yes" : "No"),
          `: ${withPercents(x.move.summary)}`),
        el("ul", {}, x.move.reasons.map((r) => el("li", {}, withPercents(r))))];
    return [
      el("p", {}, `Runs on `, el("b", {}, x.node || "nowhere yet (pending)"), ` (phase ${x.phase})`),
      el("h3", {}, "Policy"), policy,
      el("h3", {}, "Placement: every candidate node"), placement,
      el("h3", {}, "Would the descheduler move it now?"), move,
      x.evictions.length ? [el("h3", {}, "Evicted before"), evictionList(x.evictions)] : null,
      missingList(x.missing),
    ];
  }

  function nodeBody(x) {
    return [
      el("p", {}, x.ready ? "Ready" : "NotReady"),
      el("h3", {}, "Metrics"),
      el("table", {}, x.metrics.map((m) => el("tr", { "data-metric": m.metric },
        el("td", {}, m.metric), el("td", {}, metricValue(m.metric, m.value)), el("td", { class: "muted" }, age(m.ageSeconds))))),
      el("h3", {}, "Policies"),
      x.policies.length ? verdictRows(x.policies, null, true) : el("p", { class: "muted" }, "none"),
      el("h3", {}, "Labels"),
      el("ul", {}, Object.entries(x.labels).sort().map(([k, v]) => el("li", {}, `${k}=${v}`))),
      el("h3", {}, "Taints"), el("p", {}, x.taints.join(", ") || "none"),
      el("h3", {}, "Pods"), el("p", {}, x.pods.join(", ") || "none"),
      el("h3", {}, "Recent evictions"), evictionList(x.evictions),
      curveSection(x.curve),
      missingList(x.missing),
    ];
  }

  // The node's pressure curve as `tas explain node` prints it, in the card's words and the
  // page's units: learned or the shared model, and what moving one core off it predicts.
  function curveSection(curve) {
    if (!curve) return null;
    const cores = Number.isInteger(curve.cores) ? String(curve.cores) : fmt(curve.cores);
    const head = curve.fallback
      ? `shared model (Erlang C on ${cores} cores): ${curve.samples} usable samples so far, too few to fit`
      : `learned, acts like ${curve.servers} of ${cores} cores (${curve.samples} samples)`;
    const move = curve.pressure === null ? null : el("p", { "data-curve-move": "" },
      `moving 1 core off: pressure ${pct(curve.pressure)} -> ${pct(curve.pressureAfterMove)}, ` +
      `relief ${fmt(curve.relief)} stalled cores` + (curve.fallback ? "" :
        ` (shared model: -> ${pct(curve.sharedPressureAfterMove)}, relief ${fmt(curve.sharedRelief)})`));
    return [el("h3", {}, "Pressure curve"), el("p", { "data-curve-head": "" }, head), move];
  }

  function show(kind, name) {
    document.getElementById("explain")?.remove();
    const close = el("button", { class: "close", title: "close", "aria-label": "close" }, "×");
    const body = el("div", { class: "body" }, el("p", { class: "muted" }, "explaining…"));
    const panel = el("aside", { id: "explain", role: "dialog", "data-kind": kind, "data-name": name, "data-state": "loading" },
      close, el("h2", {}, `Why: ${kind} ${name}`), body);
    close.addEventListener("click", () => panel.remove());
    document.body.append(panel);
    const path = name.split("/").map(encodeURIComponent).join("/");
    fetch(`/api/explain/${kind}/${path}`)
      .then((response) => response.json().then((data) => ({ ok: response.ok, data })))
      .then(({ ok, data }) => {
        if (!ok) {
          const near = data.near && data.near.length ? ` Did you mean ${data.near.join(", ")}?` : "";
          body.replaceChildren(el("p", { class: "fail" }, (data.error || "failed") + near));
          panel.dataset.state = "error";
          return;
        }
        body.replaceChildren(...[kind === "pod" ? podBody(data) : nodeBody(data)].flat(3).filter(Boolean));
        panel.dataset.state = "loaded";
      })
      .catch((error) => {
        body.replaceChildren(el("p", { class: "fail" }, `cannot explain: ${error}`));
        panel.dataset.state = "error";
      });
  }

  document.addEventListener("click", (event) => {
    const target = event.target instanceof Element ? event.target : null;
    if (!target || target.closest("#explain")) return;
    const pod = target.closest("[data-pod]");
    if (pod) {
      show("pod", pod.dataset.pod);
      return;
    }
    const title = target.closest(".node-name");
    const card = title && title.closest("[data-node]");
    if (card) show("node", card.dataset.node);
  });
  // Say so where a newcomer looks: the tooltip of what can be clicked.
  document.addEventListener("mouseover", (event) => {
    const target = event.target instanceof Element ? event.target.closest("[data-pod], .node-name") : null;
    if (!target || target.dataset.explainHint) return;
    const hint = target.matches("[data-pod]") ? "click: why is this pod here?" : "click: this node to every policy";
    target.title = target.title ? `${target.title}\n${hint}` : hint;
    target.dataset.explainHint = "1";
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape") document.getElementById("explain")?.remove();
  });
  window.explainOnPage = show;
})();
