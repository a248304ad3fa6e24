"""The page as the newcomer of issue 45 read it, in a real headless Chromium against a real
`tas run`: what each word, number, time and line on it means, without asking.

Covered:
- the header's health_metric legend reads as values (`0 = healthy`), with how many nodes hold
  each value now ("1 of 5 nodes: don't schedule here (node-b)"), and each policy rule says how
  many nodes it affects ("1 of 5 nodes: don't schedule here");
- one unit per metric: utilization and pressure in percent, rounded alike (at most one
  decimal) in the meters, the descheduler's thresholds, the explain panel's metrics and the
  load-aware sentences of the log ("cpu_utilization 85.3% > high 85%", never "85.34 > high 85");
- an overutilized node says why: since when, above which high threshold, and the hysteresis
  that keeps it so (until below the low threshold, or for the hold time; a held node: until
  when), as descheduler/classify.py's hold_overutilized decides; the value it quotes is the
  card's "load-aware" meter (the last cycle's, its signal named in its title), not the CPU bar;
- the CPU chart draws the red lines its caption names (the load-aware high and low), and a
  caption with nothing to draw names none; no chart twice: with the load-aware signal
  cpu_utilization on fixed thresholds, no usage chart (it would be the CPU chart again);
  threshold tags sit right of the plot, never over the data nor over each other, and leave
  room for the newest time label;
- a hidden row takes no room: a meter with no value yet (a card's load-aware meter before the
  first cycle) and every other element the page hides render as nothing;
- the time axis never shows one time twice (also over the first seconds, a one-second range);
- a soft taint's chip shows its key without the domain, whole on one line inside its card (the
  whole key was cut), with the whole taint in its title;
- every time on the page is 24-hour: the log's and the explain panel's eviction times.
Screenshot: `test-artifacts/dashboard-plain.png`.
"""

from __future__ import annotations

import re
from pathlib import Path

import httpx
from selenium import webdriver
from selenium.webdriver.common.by import By

from tests.demo_process import start_demo
from tests.tas_dashboard.browser import LOADED, click, js, patient, read, screenshot

POLICY = '[data-policy="health-metric-demo/demo-policy"]'
#: A percent as the page writes it: at most one decimal.
PERCENT = r"\d+(\.\d)?%"
#: How the page renders a card's meter it hides (app.js's `meter`, hidden as a card's
#: load-aware meter is before the first cycle), made and removed again in one script.
HIDDEN_METER_DISPLAY = """
const row = Object.assign(meter("load-aware", "usage"), { hidden: true });
document.querySelector("#nodes").append(row);
const display = getComputedStyle(row).display;
row.remove();
return display;
"""
TIME = r"\d\d:\d\d:\d\d"

#: Per chart: threshold tags that overlap each other or sit over the plot, and whether the
#: gutter right of the plot holds half the newest time label (centred on its tick there).
LAYOUT = """
const out = [];
for (const [key, chart] of Object.entries(view.charts)) {
  const u = chart.plot;
  if (u.root.closest("figure").hidden) continue;
  const plot = u.over.getBoundingClientRect();
  const tags = [...u.root.querySelectorAll(".threshold-label")]
    .map((e) => e.getBoundingClientRect());
  tags.forEach((r, i) => {
    if (r.left < plot.right) out.push(`${key}: a tag over the plot`);
    tags.slice(i + 1).forEach((o) => {
      if (r.top < o.bottom - 0.5 && o.top < r.bottom - 0.5) out.push(`${key}: tags overlap`);
    });
  });
  const gutter = u.root.getBoundingClientRect().right - plot.right;
  const newest = textWidth(clockTime(u.scales.x.max));
  if (gutter < newest / 2) out.push(`${key}: gutter ${gutter} < half of ${newest}`);
}
return out;
"""

#: The time labels each chart's x axis shows now, blanks left out.
TIME_LABELS = """
return Object.fromEntries(Object.entries(view.charts).map(([key, c]) =>
  [key, (c.plot.axes[0]._values || []).filter(Boolean)]));
"""


def test_the_page_says_what_its_words_numbers_times_and_lines_mean(
    browser: webdriver.Chrome,
    tmp_path: Path,
) -> None:
    wait = patient(browser)
    with start_demo(tmp_path) as demo:
        browser.get(f"{demo.dashboard}/")
        wait.until(lambda d: d.execute_script("return window.chartView && chartView.draws > 0"))
        # The first seconds: a range of a second or so, and never one time twice on an axis.
        for labels in js(browser, TIME_LABELS).values():
            assert len(labels) == len(set(labels)), labels

        # health_metric: values, and how many nodes hold each; each rule, how many it affects.
        hint = read(wait, "#demo-hint")
        assert "0 = healthy, 1 = don't schedule here, 2 = move pods away" in hint
        wait.until(
            lambda d: "1 of 5 nodes: don't schedule here (node-b)" in read(wait, "#health-counts")
        )
        assert "4 of 5 nodes: healthy" in read(wait, "#health-counts")
        wait.until(
            lambda d: (
                read(wait, f'{POLICY} [data-affects="dontschedule"]')
                == "1 of 5 nodes: don't schedule here (node-b)"
            )
        )
        assert read(wait, f'{POLICY} [data-affects="deschedule"]') == "0 of 5 nodes: move pods away"

        # Percent, rounded alike, wherever utilization and pressure are shown.
        # The meters a reader sees (a card's load-aware meter stays hidden until a cycle judged it).
        meters = js(browser, "return [...document.querySelectorAll('.meter > span:last-child')]"
                             ".filter((e) => !e.closest('[hidden]'))"
                             ".map((e) => e.textContent)")  # fmt: skip
        assert meters
        assert all(re.fullmatch(PERCENT, m) for m in meters), meters
        # A hidden meter takes no row (a card's load-aware meter before the first cycle): the
        # stylesheet's own display for meters must not override the hidden attribute.
        assert js(browser, HIDDEN_METER_DISPLAY) == "none"
        shown = js(browser, "return [...document.querySelectorAll('[hidden]')]"
                            ".filter((e) => getComputedStyle(e).display !== 'none')"
                            ".map((e) => e.outerHTML.slice(0, 80))")  # fmt: skip
        assert shown == [], shown
        wait.until(lambda d: "cpu_utilization: low 35%, high 85%" in read(wait, "#descheduler"))
        sentence = (
            "node node-a is overutilized: cpu_utilization 85.34 > high 85; moving 0.23 cores: "
            "pressure 1.00 -> 0.405 on node-a, 0.01 -> 0.02 on node-d; relief 0.2"
        )
        said = js(browser, "return withPercents(arguments[0])", sentence)
        assert said == (
            "node node-a is overutilized: cpu_utilization 85.3% > high 85%; moving 0.23 cores: "
            "pressure 100% -> 40.5% on node-a, 1% -> 2% on node-d; relief 0.2"
        )
        rule = "removed node-b (psi-aware: cpu_pressure GreaterThan 0.6 (value 0.8123))"
        assert js(browser, "return withPercents(arguments[0])", rule) == (
            "removed node-b (psi-aware: cpu_pressure GreaterThan 60% (value 81.2%))"
        )
        health = "removed node-b (demo-policy: health_metric Equals 1 (value 1))"
        assert js(browser, "return withPercents(arguments[0])", health) == health

        # The CPU chart draws the load-aware thresholds its caption names; pressure has none.
        tags = "#chart-util .threshold-label"
        wait.until(
            lambda d: {e.text for e in d.find_elements(By.CSS_SELECTOR, tags)} == {"85%", "35%"}
        )
        util = read(wait, "#util-caption")
        assert "red / dark: the load-aware high / low thresholds" in util
        # The load-aware signal is cpu_utilization: no second chart of the same data.
        usage = browser.find_element(By.ID, "chart-usage")
        wait.until(lambda d: not usage.is_displayed())
        assert "policies" not in util  # demo-policy has no rule on cpu_utilization
        red = js(browser, """
            const u = view.charts.util.plot;
            const y = Math.round(u.valToPos(0.85, "y", true));
            const row = u.ctx.getImageData(u.bbox.left, y, u.bbox.width, 1).data;
            let red = 0;
            for (let i = 0; i < row.length; i += 4) if (row[i] > 180 && row[i + 1] < 60) red++;
            return red / (row.length / 4);""")  # fmt: skip
        assert red > 0.3, f"the dashed red line at 85%: {red:.0%} of the row"
        assert "red" not in read(wait, "#pressure-caption")
        assert not browser.find_elements(By.CSS_SELECTOR, "#chart-pressure .threshold-label")

        # Load on node-a: overutilized, and why; its soft taint's chip on one line.
        for _ in range(2):
            httpx.post(f"{demo.dashboard}/api/nodes/node-a/load", json={"cores": 2}, timeout=5)
        note = '[data-node="node-a"] [data-class-note]'
        wait.until(lambda d: read(wait, note).startswith("overutilized since"))
        assert re.fullmatch(
            rf"overutilized since {TIME}: cpu_utilization {PERCENT} > high 85%; once not above "
            r"high, held until below 35% or for \d+s",
            read(wait, note),
        ), read(wait, note)
        # The number the note quotes is on the card: its load-aware meter, read in one render.
        quoted = js(browser, """
            const card = document.querySelector('#nodes [data-node="node-a"]');
            const row = card.querySelector('.meter[data-signal="cpu_utilization"]');
            const said = card.querySelector('[data-class-note]').textContent
              .match(/cpu_utilization (\\S+%)/);
            return [said && said[1], row && !row.hidden && row.lastChild.textContent,
                    row && row.title];""")  # fmt: skip
        assert quoted[0] is not None, quoted
        assert quoted[0] == quoted[1], quoted
        assert quoted[2].startswith(f"cpu_utilization {quoted[0]} at the last descheduling cycle")
        chip = '[data-node="node-a"] .chip.taint'
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, chip))
        shape = js(browser, """
            const chip = document.querySelector(arguments[0]);
            const card = chip.closest("[data-node]").getBoundingClientRect();
            const r = chip.getBoundingClientRect();
            return { lines: Math.round(r.height / parseFloat(getComputedStyle(chip).lineHeight)),
                     inside: r.right <= card.right, title: chip.title, text: chip.textContent,
                     cut: chip.scrollWidth > chip.clientWidth };""", chip)  # fmt: skip
        assert shape["lines"] == 1, shape
        assert shape["inside"], shape
        assert not shape["cut"], shape
        assert shape["text"] == "overutilized=true:PreferNoSchedule"
        assert shape["title"] == "telemetry.aware.scheduling/overutilized=true:PreferNoSchedule"
        # A node the hysteresis holds: until when, and why it is still overutilized.
        held = js(browser, """
            const t = view.state.time;
            const over = { since: t - 60, lastAbove: t - 20, held: true, holdSeconds: 120,
                           holdUntil: t + 100 };
            return [classNote({ usage: { cpu_utilization: 75.75 }, overutilized: over }),
                    clockTime(t - 60), clockTime(t + 100)];""")  # fmt: skip
        text, since, until = held
        assert text == (
            f"overutilized since {since}, until below 35% or until {until}: held "
            "(cpu_utilization 75.8% at the last cycle, not above high 85%)"
        )
        # A hot node none of whose pods left: the rule the cycle recorded for them.
        kept = js(browser, """
            const t = view.state.time;
            const over = { since: t - 60, lastAbove: t, held: false, holdSeconds: 120,
                           holdUntil: t + 120,
                           keptBy: "LoadAware: the move does not pay (3 pod(s))" };
            const node = { usage: { cpu_utilization: 95 }, overutilized: over };
            return classNote(node);""")  # fmt: skip
        assert kept.endswith(
            "; not relieved in the last cycle: LoadAware: the move does not pay (3 pod(s))"
        )

        # Thresholds' tags beside the plot, apart; the newest time label has room.
        js(browser, "drawCharts()")
        assert not js(browser, LAYOUT)
        for labels in js(browser, TIME_LABELS).values():
            assert len(labels) == len(set(labels)), labels

        # 24-hour times: an eviction, in the log and in the explain panel.
        httpx.post(f"{demo.dashboard}/api/nodes/node-c/health", json={"value": 2}, timeout=5)
        evicted = '#log tr[data-kind="eviction"]'
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, evicted))
        cells = js(browser, "return [...document.querySelectorAll('#log tr td:first-child')]"
                            ".map((c) => c.textContent)")  # fmt: skip
        assert all(re.fullmatch(TIME, c) for c in cells), cells[:5]
        # Without the page's own clock, this browser writes 12-hour times: the check can fail.
        assert re.search(r"AM|PM", js(browser, "return new Date(0).toLocaleTimeString()"))
        wait.until(lambda d: demo.get("/api/explain/node/node-c")["evictions"] or None)
        wait.until(lambda d: click(d, '[data-node="node-c"] .node-name'))
        panel = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, f'{LOADED}[data-kind="node"]'))
        assert not re.search(r"\b(AM|PM)\b", panel.text)
        items = [li.text for li in panel.find_elements(By.CSS_SELECTOR, "h3 + ul li")]
        assert any(re.match(rf"{TIME} health-metric-demo/demo-app-", item) for item in items), items
        row = panel.find_element(By.CSS_SELECTOR, 'tr[data-metric="cpu_utilization"]')
        assert re.search(rf"cpu_utilization {PERCENT}", row.text), row.text

        browser.execute_script("window.scrollTo(0, 0)")
        screenshot(browser, "dashboard-plain.png")
