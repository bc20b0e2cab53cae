# The dashboard (under tmux, at 80x24 and wider, without colour) and the plots (in headless
# Chromium: axes, colours, titles). Run by tests/run.py with tests/helpers.py's names (test, run,
# rows, analyse, eq, wait_for, Skip, craft, chromium, ...); names here start with ui_ so they do
# not shadow the helpers'.
import socket as ui_socket
import struct as ui_struct


class UiConn6(craft.Conn):
    """craft.Conn over IPv6."""

    def _frame(self, src, dst, seg):
        ip = ui_struct.pack("!IHBB16s16s", 6 << 28, len(seg), 6, 64,
                            ui_socket.inet_pton(ui_socket.AF_INET6, src),
                            ui_socket.inet_pton(ui_socket.AF_INET6, dst))
        return craft.ether(ip + seg, 0x86DD)

    def c(self, dt, flags, seq, ack, **kw):
        self.t += dt
        self.out.append((self.t, self._frame(self.cip, self.sip, craft.tcp(
            self.cport, self.sport, self.cisn + seq, self.sisn + ack, flags, **kw))))

    def s(self, dt, flags, seq, ack, **kw):
        self.t += dt
        self.out.append((self.t, self._frame(self.sip, self.cip, craft.tcp(
            self.sport, self.cport, self.sisn + seq, self.cisn + ack, flags, **kw))))


def ui_flow(c, rtt, segs, loss=False, req=b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"):
    """One HTTP exchange seen next to the client, with timestamps (the client's clock ticks
    every 10 us, the server's every ms): handshake of round trip rtt, a request, segs full
    segments back to back (1448 bytes: 1460 less the timestamps), the client's ACK at once
    and, a round trip after it, four more segments that echo it (a cwnd verdict, IW segs); with loss the third segment of
    the flight never shows (a hole: no verdict)."""
    mss, n = 1460, len(req)
    seg = mss - 12
    echo = {"c": 0, "s": 0}

    def ts(side, dt):
        t = c.t + dt
        val = int(t * 1e5) & 0xffffffff if side == "c" else (int(t * 1e3) + 7000) & 0xffffffff
        ecr, echo["s" if side == "c" else "c"] = echo[side], val
        return (val, ecr)

    def cl(dt, flags, seq, ack, **kw):
        c.c(dt, flags, seq, ack, opts=craft.tcp_options(ts=ts("c", dt), **kw.pop("o", {})), **kw)

    def sv(dt, flags, seq, ack, **kw):
        c.s(dt, flags, seq, ack, opts=craft.tcp_options(ts=ts("s", dt), **kw.pop("o", {})), **kw)

    cl(0, "S", 0, 0, o={"mss": mss})
    sv(rtt, "SA", 0, 1, o={"mss": mss})
    cl(0.0001, "A", 1, 1)
    cl(0.0001, "PA", 1, 1, payload=req)
    for i in range(segs):
        if not (loss and i == 2):
            sv(rtt if i == 0 else 0.00001, "A", 1 + seg * i, 1 + n, payload=bytes(seg))
    cl(0.00005, "A", 1 + n, 1 + seg * (2 if loss else segs))
    for i in range(segs, segs + 4):
        sv(rtt if i == segs else 0.00001, "A", 1 + seg * i, 1 + n, payload=bytes(seg))
    end = 1 + seg * (segs + 4)
    cl(0.00005, "A", 1 + n, 1 + seg * 2 if loss else end)
    cl(0.001, "FA", 1 + n, end)
    sv(0.001, "FA", end, 2 + n)
    cl(0.001, "A", 2 + n, end + 1)
    return c.out


UI_YOUTUBE = b"GET / HTTP/1.1\r\nHost: www.youtube.com\r\n\r\n"     # nDPI: HTTP.YouTube
UI_PROXY = b"GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n"  # HTTP.HTTP_Proxy
UI_V6_SERVER = "2001:db8:aaaa:bbbb:cccc:dddd:eeee:1"
UI_V6_CLIENT = "2001:db8:1111:2222:3333:4444:5555:6666"


def ui_capture(tmp):
    """Six flows, one after another: two IW10 flows to a YouTube-named server, two flows to
    another server that both lose a segment of their first flight, an IW16 flow to an IPv6
    server through an HTTP proxy (a long app name), and an IW4 flow. Handshake RTTs from
    0.4 ms to 300 ms."""
    t = 1700000000.0
    pk = []
    pk += ui_flow(craft.Conn(cport=41000, sport=80, sip="198.51.100.20", t0=t), 0.0004, 10, req=UI_YOUTUBE)
    pk += ui_flow(craft.Conn(cport=41001, sport=80, sip="198.51.100.20", t0=t + 1), 0.004, 10, req=UI_YOUTUBE)
    pk += ui_flow(craft.Conn(cport=42000, sport=80, sip="198.51.100.30", t0=t + 2), 0.02, 10, loss=True)
    pk += ui_flow(craft.Conn(cport=42001, sport=80, sip="198.51.100.30", t0=t + 3), 0.02, 10, loss=True)
    pk += ui_flow(UiConn6(cip=UI_V6_CLIENT, sip=UI_V6_SERVER, cport=43000, sport=8080, t0=t + 4),
                  0.03, 16, req=UI_PROXY)
    pk += ui_flow(craft.Conn(cport=44000, sport=80, sip="198.51.100.40", t0=t + 5), 0.3, 4)
    p = os.path.join(tmp, "ui.pcap")
    craft.write_pcap(p, sorted(pk, key=lambda x: x[0]))
    return p


# The dashboard in a tmux server of each test's own: run.py's socket may be in use by a test
# run of another tree, and a server just killed may still hold its socket.
UI_TMUX = ["iwscope-ui-%d-0" % os.getpid()]


def ui_tmux(*args):
    return subprocess.run(["tmux", "-L", UI_TMUX[0]] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)


def ui_tmux_end():
    """Stops this test's tmux server and removes its socket (tmux leaves it behind)."""
    ui_tmux("kill-server")
    sock = os.path.join(os.environ.get("TMUX_TMPDIR", "/tmp"), "tmux-%d" % os.getuid(), UI_TMUX[0])
    if os.path.exists(sock):
        os.unlink(sock)


def ui_screen():
    """The pane as lines, trailing blanks removed."""
    return [l.rstrip() for l in ui_tmux("capture-pane", "-p", "-t", "ui").stdout.split("\n")]


def ui_start(binary, tmp, cols, lines):
    if not shutil.which("tmux"):
        raise Skip("tmux not installed")
    UI_TMUX[0] = "iwscope-ui-%d-%s" % (os.getpid(), os.path.basename(tmp))
    pcap, db = ui_capture(tmp), os.path.join(tmp, "ui.db")
    cmd = "%s -r %s --replay=50 -o %s; echo EXITED rc=$?; sleep 60" % (binary, pcap, db)
    r = ui_tmux("new-session", "-d", "-s", "ui", "-x", str(cols), "-y", str(lines), cmd)
    if r.returncode != 0:
        raise AssertionError("tmux: " + r.stderr)
    wait_for(lambda: "6 flows" in ui_screen()[0], 60, "the six flows")
    return db


def ui_quit():
    ui_tmux("send-keys", "-t", "ui", "q")
    wait_for(lambda: any("EXITED" in l for l in ui_screen()), 20, "the exit")
    out = "\n".join(ui_screen())
    assert "EXITED rc=0" in out and "Sanitizer" not in out and "runtime error" not in out, out


def ui_title(want, timeout):
    """Waits for the title line to read want; fails with the line it reads."""
    try:
        wait_for(lambda: ui_screen()[0] == want, timeout, "the title")
    except AssertionError:
        eq(ui_screen()[0], want, "title")


def ui_pane_rows(screen, heading):
    """The table under heading: its column line and its rows up to the next blank line or
    heading."""
    i = next(k for k, l in enumerate(screen) if l.startswith(heading))
    out = []
    for l in screen[i + 1:]:
        if not l or l.startswith("Recent flows") or l.startswith("q quit"):
            break
        out.append(l)
    return out


UI_HELP = "q quit  p pause  / filter  Tab pane  j/k scroll  s sort  ? help"


@test("dashboard-80x24-title-verdicts-help", ("release", "asan"))
def t_ui_80x24(binary, tmp):
    """At 80x24 the title keeps 'replay finished', PAUSED and the filter (the rates and the
    source give way), the help line is whole, every server's and flow's verdict is in its
    column (an IPv6 address with port, a long app name and a name share the line), the server
    whose flows all lost data shows '-', and '/' matches in any case."""
    try:
        db = ui_start(binary, tmp, 80, 24)
        # rates fall to 0 at the first redraw after the end; the source is the first to go
        title = " iwscope  0 pkt/s  0.0 flows/s  6 flows  0 open  [replay finished: q quits]"
        ui_title(title, 10)
        s = ui_screen()
        eq(len(s[23]), len(UI_HELP), "help line length")
        eq(s[23], UI_HELP, "help line")
        eq(ui_pane_rows(s, "Top servers"), [
            "server                                     flows exact IW   app    name",
            "198.51.100.20:80                               2     2 IW10 HTTP.~ www.youtube.~",
            "198.51.100.30:80                               2     0 -    HTTP   x",
            "198.51.100.40:80                               1     1 IW4  HTTP   x",
            "[2001:db8:aaaa:bbbb:cccc:dddd:eeee:1]:8080     1     1 IW16 HTTP.~ example.com"], "servers at 80x24")
        recent = ui_pane_rows(s, "Recent flows")
        eq(recent[0].split(), ["client", "server", "app", "c_win", "s_win", "server", "ff", "class"], "recent head")
        eq([l.split()[-1] for l in recent[1:]], ["IW4", "IW16", "-", "-", "IW10"], "recent verdicts, newest first")
        eq([l.split()[-3:-1] for l in recent[1:]], [["4", "cwnd"], ["16", "cwnd"], ["9", "loss"],
                                                   ["9", "loss"], ["10", "cwnd"]], "first flights")
        v6 = recent[2].split()
        assert v6[0].startswith("~") and v6[1].startswith("~") and v6[1].endswith("]:8080"), recent[2]
        assert UI_V6_CLIENT.endswith(v6[0][1:]) and ("[%s]:8080" % UI_V6_SERVER).endswith(v6[1][1:]), recent[2]
        assert all(len(l) <= 80 for l in s), s
        eq(s[2][:40].rstrip(), "cwnd 4 loss 2", "verdict counts (closer together, zeros left out, to fit)")
        # paused, then a filter in other case than the app name (HTTP.HTTP_Proxy)
        ui_tmux("send-keys", "-t", "ui", "p")
        wait_for(lambda: "[PAUSED]" in ui_screen()[0], 5, "PAUSED")
        ui_tmux("send-keys", "-t", "ui", "/", "proxy", "Enter")
        title = " iwscope  6 flows  0 open  [PAUSED]  [filter: proxy]  [replay finished: q quits]"
        ui_title(title, 5)
        s = ui_screen()
        eq(s[23], UI_HELP, "help line, filtered")
        eq(ui_pane_rows(s, "Top servers")[1:], [
            "[2001:db8:aaaa:bbbb:cccc:dddd:eeee:1]:8080     1     1 IW16 HTTP.HT~ example.com"], "servers, filtered")
        eq([l.split()[-1] for l in ui_pane_rows(s, "Recent flows")[1:]], ["IW16"], "recent, filtered")
        # a filter longer than the room left keeps its end in sight
        ui_tmux("send-keys", "-t", "ui", "/", "Escape")
        ui_tmux("send-keys", "-t", "ui", "/", "a-filter-much-longer-than-the-title-has-room-for", "Enter")
        wait_for(lambda: "room-for]" in ui_screen()[0], 5, "the long filter")
        t = ui_screen()[0]
        assert t.startswith(" iwscope  [PAUSED]  [filter: ~") and t.endswith("room-for]  [replay finished: q quits]") \
            and len(t) <= 80, t
        ui_tmux("send-keys", "-t", "ui", "/", "Escape")
        ui_quit()
        eq(len(rows(db)), 6, "flows in the database")
    finally:
        ui_tmux_end()


@test("dashboard-wide-terminal-widens-columns", ("release", "asan"))
def t_ui_wide(binary, tmp):
    """On a wider terminal the columns grow to what they show: whole IPv6 addresses with
    their ports, whole app names; at 80 columns the same rows were cut (previous test)."""
    try:
        ui_start(binary, tmp, 150, 30)
        wait_for(lambda: "0 pkt/s" in ui_screen()[0], 10, "the rates to settle")
        s = ui_screen()
        eq(ui_pane_rows(s, "Top servers"), [
            "server                                     flows exact IW   app             name",
            "198.51.100.20:80                               2     2 IW10 HTTP.YouTube    www.youtube.com",
            "198.51.100.30:80                               2     0 -    HTTP            x",
            "198.51.100.40:80                               1     1 IW4  HTTP            x",
            "[2001:db8:aaaa:bbbb:cccc:dddd:eeee:1]:8080     1     1 IW16 HTTP.HTTP_Proxy example.com"], "servers at 150 columns")
        recent = ui_pane_rows(s, "Recent flows")
        eq(recent[2].split(), [UI_V6_CLIENT, "[%s]:8080" % UI_V6_SERVER, "HTTP.HTTP_Proxy", "64240",
                               "64240", "16", "cwnd", "IW16"], "the IPv6 flow, whole")
        eq(len(recent), 7, "every flow")
        assert s[0].startswith(" iwscope  %s  0 pkt/s" % os.path.join(tmp, "ui.pcap")), s[0]
        ui_quit()
    finally:
        ui_tmux_end()


# ---------------------------------------------------------------------------------------------
# Plots

UI_SVG = "{http://www.w3.org/2000/svg}"


def ui_plots(binary, tmp):
    """The crafted capture and the demo as two runs of one database, plotted; each chart as
    an ElementTree (a strict XML parser: a malformed file fails here)."""
    import xml.etree.ElementTree as ET
    cap, demo = ui_capture(tmp), os.path.join(PCAPS, "demo.pcap")
    db = analyse(binary, [cap], tmp, name="p.db")
    analyse(binary, [demo], tmp, name="p.db")
    out = os.path.join(tmp, "plots")
    run(["plot", db, "-o", out], binary, 0)
    charts = {f[:-4]: ET.parse(os.path.join(out, f)).getroot() for f in os.listdir(out)}
    eq(sorted(charts), ["ff_bytes_cdf", "iw_histogram", "rtt_vs_ff", "syn_window"], "charts")
    return db, cap, demo, charts


def ui_all(root, tag, cls=None):
    return [e for e in root.iter(UI_SVG + tag) if cls is None or e.get("class") == cls]


def ui_ticks(root, axis, panel=None):
    """The scale and tick values of an axis: of one panel's (data-panel) when a chart has
    several, the first one's unless panel names it."""
    line = [e for e in ui_all(root, "line", "axis") if e.get("data-axis") == axis
            and (panel is None or e.get("data-panel") == panel)]
    assert line, "no %s axis line (class axis, data-axis, data-scale)" % axis
    line = line[0]
    ticks = [e for e in ui_all(root, "text", "tick") if e.get("data-axis") == axis
             and e.get("data-panel") == line.get("data-panel")]
    for e in ticks:  # the label a reader sees is the value: 500, 0.2, 5k, 2M
        t = e.text
        v = float(t[:-1]) * {"k": 1e3, "M": 1e6}[t[-1]] if t[-1] in "kM" else float(t)
        assert abs(v - float(e.get("data-value"))) <= 1e-9 * abs(v), (t, e.get("data-value"))
    return line.get("data-scale"), [float(e.get("data-value")) for e in ticks]


def ui_is125(v):
    """v is 1, 2 or 5 x 10^k."""
    import math
    if v <= 0:
        return False
    k = math.floor(math.log10(v) + 1e-9)
    return any(abs(v - m * 10.0 ** k) <= 1e-9 * v for m in (1, 2, 5))


@test("plots-round-ticks-log-rtt-no-loss", ("release", "asan"))
def t_ui_plot_axes(binary, tmp):
    """Every tick is round: linear axes start at 0 and step by 1, 2 or 5 x 10^k, log axes tick
    at 1, 2, 5 x 10^k. Handshake RTTs from 0.4 ms to 300 ms get a log axis; the two flows
    whose first flight lost a segment are no points of the RTT / first-flight scatter (nor in
    the IW histogram or the CDF), and every other flow is one."""
    db, _, _, charts = ui_plots(binary, tmp)
    loss = rows(db, "SELECT rtt_us FROM flows WHERE s_iw_limit = 'loss'")
    eq(len(loss), 2, "loss flows in the database")
    want = sorted((r["s_iw_limit"], round(r["rtt_us"] / 1000.0, 3), r["s_iw_bytes"]) for r in rows(
        db, "SELECT s_iw_limit, rtt_us, s_iw_bytes FROM flows WHERE s_iw_limit <> 'loss'"))
    got = sorted((e.get("data-series"), float(e.get("data-rtt-ms")), int(e.get("data-bytes")))
                 for e in ui_all(charts["rtt_vs_ff"], "circle", "point"))
    eq(got, want, "scatter points: every flow but the loss ones")
    eq(len(got), 14, "points")
    hist = sum(int(e.get("data-value")) for e in ui_all(charts["iw_histogram"], "rect", "bar"))
    eq(hist, 14, "flows in the IW histogram")
    cdf = sum(int(e.get("data-flows")) for e in ui_all(charts["ff_bytes_cdf"], "polyline", "cdf"))
    eq(cdf, 14, "flows in the CDF")
    scales = {}
    for name, root in sorted(charts.items()):
        for axis in ("x", "y"):
            scale, ticks = ui_ticks(root, axis)
            scales[name + "." + axis] = scale
            if scale == "category":
                eq(ticks, [], name + " category axis ticks")
                continue
            assert len(ticks) >= 2, (name, axis, ticks)
            if scale == "log":
                assert all(ui_is125(v) for v in ticks), (name, axis, ticks)
            else:
                step = ticks[1] - ticks[0]
                assert ticks[0] == 0 and ui_is125(step), (name, axis, ticks)
                assert all(abs(b - a - step) < 1e-9 * step for a, b in zip(ticks, ticks[1:])), (name, axis, ticks)
    eq(scales, {"ff_bytes_cdf.x": "log", "ff_bytes_cdf.y": "linear", "iw_histogram.x": "category",
                "iw_histogram.y": "linear", "rtt_vs_ff.x": "log", "rtt_vs_ff.y": "log",
                "syn_window.x": "category", "syn_window.y": "linear"}, "axis scales")
    # RTT 0.5 .. 300.1 ms: at most 3 decades, 1-2-5 ticks; bytes 40 .. 23360: decades
    eq(ui_ticks(charts["rtt_vs_ff"], "x")[1], [0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500], "RTT ticks")
    eq(ui_ticks(charts["rtt_vs_ff"], "y")[1], [10, 100, 1000, 10000, 100000], "first-flight bytes ticks")
    eq(ui_ticks(charts["iw_histogram"], "y")[1], [0, 1, 2, 3, 4], "flow count ticks")
    # the histogram's two panels, each its own count axis: exact IWs, lower bounds
    eq(ui_ticks(charts["iw_histogram"], "y", "exact"), ("linear", [0, 1, 2, 3, 4]), "exact IW panel")
    eq(ui_ticks(charts["iw_histogram"], "y", "lower"), ("linear", [0, 1, 2]), "lower bound panel")
    eq(ui_ticks(charts["ff_bytes_cdf"], "y")[1], [0, 0.2, 0.4, 0.6, 0.8, 1], "fraction ticks")


@test("plots-titles-and-colours", ("release", "asan"))
def t_ui_plot_titles(binary, tmp):
    """Each title names its chart with the flows drawn of those in the database, the line
    under it the source (both runs) and what was left out; a colour means one thing in every
    chart: each verdict its own (cwnd the same green in the histogram and the scatter), the
    two sides two others, the applications greys that are no verdict's."""
    db, cap, demo, charts = ui_plots(binary, tmp)
    def text(root, cls):
        e = ui_all(root, "text", cls) or (ui_all(root, "text")[:1] if cls == "title" else [])
        return "".join(e[0].itertext()) if e else None
    src = cap + ", " + demo
    titles = {n: (text(r, "title"), text(r, "subtitle"), r.get("data-source"), r.get("data-flows"),
                  r.get("data-total")) for n, r in charts.items()}
    dash = " \u2014 "
    eq(titles, {
        "iw_histogram": ("Server initial windows, 14 of 16 flows",
                         src + dash + "11 exact (cwnd), 3 lower bounds; left out: 2 loss (no verdict)",
                         src, "14", "16"),
        "ff_bytes_cdf": ("Server first-flight bytes by application (CDF), 14 of 16 flows",
                         src + dash + "left out: 2 loss (no verdict)", src, "14", "16"),
        "syn_window": ("SYN window classes, 16 flows",
                       src + dash + "16 client SYNs, 16 server SYNs (SYN-ACK) seen", src, "16", "16"),
        "rtt_vs_ff": ("Handshake RTT vs server first-flight size, 14 of 16 flows",
                      src + dash + "left out: 2 loss (no verdict)", src, "14", "16"),
    }, "titles")
    # colours by meaning, across the charts
    seen = {}
    def note(meaning, colour):
        seen.setdefault(meaning, set()).add(colour)
    for e in ui_all(charts["iw_histogram"], "rect", "bar"):
        note(e.get("data-limit"), e.get("fill"))
    for e in ui_all(charts["rtt_vs_ff"], "circle", "point"):
        note(e.get("data-series"), e.get("fill"))
    for e in ui_all(charts["syn_window"], "rect", "bar"):
        note("side " + e.get("data-series"), e.get("fill"))
    eq(sorted(seen), ["app", "cwnd", "side client", "side server"], "meanings drawn")
    assert all(len(c) == 1 for c in seen.values()), seen
    colour = {m: c.pop() for m, c in seen.items()}
    eq(len(set(colour.values())), len(colour), "one colour per meaning: %r" % colour)
    eq(colour["cwnd"], "#2e7d32", "cwnd (exact) green")
    exact = [e.get("data-series") for e in ui_all(charts["iw_histogram"], "rect", "bar") if e.get("data-limit") == "cwnd"]
    assert exact and set(exact) == {"exact (cwnd)"}, exact
    apps = {e.get("stroke") for e in ui_all(charts["ff_bytes_cdf"], "polyline", "cdf")}
    assert apps and not apps & set(colour.values()), (apps, colour)
    # legends say the same: each legend label's swatch is its meaning's colour
    for name, key in (("iw_histogram", lambda l: l.split(": ")[-1].replace("exact (cwnd)", "cwnd")),
                      ("rtt_vs_ff", lambda l: l.split(" (")[0]),
                      ("syn_window", lambda l: "side " + l)):
        for e in ui_all(charts[name], "text", "legend"):
            eq(e.get("data-colour"), colour[key(e.text)], "%s legend %r" % (name, e.text))


@test("dashboard-tmux", ("release", "asan"))
def t_dashboard(binary, tmp):
    if not shutil.which("tmux"):
        raise Skip("tmux not installed")
    try:
        db = dashboard(binary, tmp)
        screen = pane()
        for needle in ("Server IW", "IW3", "IW10", "IW16", "Client SYN windows", "6KB",
                       "old.origin.test", "www.bigcdn.test", "Recent flows", "10 flows"):
            assert needle in screen, "%r not on screen:\n%s" % (needle, screen)
        assert "\x1b[32m" in pane(True) or "\x1b[3" in pane(True), "no colour without NO_COLOR"
        # filter: only the CDN remains in the servers pane
        tmux("send-keys", "-t", "dash", "/", "bigcdn", "Enter")
        wait_for(lambda: "filter: bigcdn" in pane(), 5, "the filter")
        s = pane()
        assert "www.bigcdn.test" in s and "old.origin.test" not in s, s
        tmux("send-keys", "-t", "dash", "Escape")
        tmux("send-keys", "-t", "dash", "/", "Escape")
        # resize below 80x24 and back: panes drop, nothing crashes
        tmux("resize-window", "-t", "dash", "-x", "60", "-y", "20")
        wait_for(lambda: "Top servers" in pane() and "Client SYN windows" not in pane(), 5, "the small layout")
        tmux("resize-window", "-t", "dash", "-x", "30", "-y", "8")
        wait_for(lambda: "terminal too small" in pane(), 5, "terminal too small")
        tmux("resize-window", "-t", "dash", "-x", "100", "-y", "30")
        wait_for(lambda: "Client SYN windows" in pane(), 5, "the full layout again")
        tmux("send-keys", "-t", "dash", "s")
        wait_for(lambda: "sort: IW" in pane(), 5, "the IW sort")
        tmux("send-keys", "-t", "dash", "?")
        wait_for(lambda: "dashboard keys" in pane(), 5, "help")
        tmux("send-keys", "-t", "dash", "x")
        tmux("send-keys", "-t", "dash", "q")
        wait_for(lambda: "EXITED rc=0" in pane(), 10, "a clean exit on q")
        eq(len(rows(db)), 10, "flows in the database")
        assert "Sanitizer" not in pane(), pane()
    finally:
        tmux("kill-session", "-t", "dash")


@test("dashboard-no-color", ("release", "asan"))
def t_no_color(binary, tmp):
    if not shutil.which("tmux"):
        raise Skip("tmux not installed")
    try:
        dashboard(binary, tmp, "NO_COLOR=1 ")
        raw = pane(True)
        import re
        assert not re.search(r"\x1b\[[0-9;]*3[0-7](;[0-9;]*)?m|\x1b\[[0-9;]*38;", raw), repr(raw[:400])
        assert "IW16" in raw
        tmux("send-keys", "-t", "dash", "q")
        wait_for(lambda: "EXITED rc=0" in pane(), 10, "exit")
    finally:
        tmux("kill-session", "-t", "dash")


@test("plots-in-chromium", ("release", "asan"))
def t_plots(binary, tmp):
    import re
    db = analyse(binary, [os.path.join(PCAPS, "demo.pcap")], tmp)
    out = os.path.join(tmp, "plots")
    rc, listing, _ = run(["plot", db, "-o", out], binary, 0)
    files = ["iw_histogram.svg", "ff_bytes_cdf.svg", "syn_window.svg", "rtt_vs_ff.svg"]
    eq([os.path.basename(l) for l in listing.split()], files, "files")
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:  # a Chromium per core
        dom = dict(zip(files, pool.map(lambda f: chromium(tmp, "--dump-dom", "file://" + os.path.join(out, f)), files)))
    bars = {(m.group(1), m.group(2)): int(m.group(3)) for m in re.finditer(
        r'<rect class="bar" data-series="([^"]+)" data-label="([^"]+)" data-value="(\d+)"', dom["iw_histogram.svg"])}
    eq(bars, {("exact (cwnd)", "IW3"): 2, ("exact (cwnd)", "IW10"): 2, ("exact (cwnd)", "IW16"): 3,
              ("lower bound", "IW1"): 1, ("lower bound", "IW2"): 2}, "IW histogram bars")
    win = {(m.group(1), m.group(2)): int(m.group(3)) for m in re.finditer(
        r'<rect class="bar" data-series="([^"]+)" data-label="([^"]+)" data-value="(\d+)"', dom["syn_window.svg"])}
    eq(win, {("client", "6KB"): 3, ("client", "64KB"): 7, ("server", "64KB"): 10}, "SYN window bars")
    cdf = dict(re.findall(r'<polyline class="cdf" data-series="([^"]+)" data-flows="(\d+)"', dom["ff_bytes_cdf.svg"]))
    eq(cdf, {"TLS": "5", "HTTP": "4", "SSH": "1"}, "CDF series")
    eq(len(re.findall(r'<circle class="point"', dom["rtt_vs_ff.svg"])), 10, "scatter points")
    png = os.path.join(tmp, "iw.png")
    chromium(tmp, "--screenshot=" + png, "--window-size=800,480", "file://" + os.path.join(out, files[0]))
    assert os.path.getsize(png) > 5000, "screenshot looks empty"
    eq(run(["plot", db], binary)[0], 1, "plot without -o")


# Plots on data shaped like real captures': many runs of long file names, hundreds of lower
# bounds beside a few exact IWs, dozens of IWs, long application names, QUIC rows (issue 31)

UI_MEASURE = """<script>
const out = [];
for (const t of document.querySelector('svg').querySelectorAll('text')) {
  const b = t.getBBox(), m = t.getCTM();
  out.push({cls: t.getAttribute('class') || '', text: t.textContent,
            box: [b.x, b.y, b.width, b.height], m: [m.a, m.b, m.c, m.d, m.e, m.f]});
}
const pre = document.createElement('pre');
pre.id = 'measure';
pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
</script>"""


def ui_measure(tmp, svg_path):
    """Every text of an SVG as Chromium lays it out: its class, text, box in its own
    coordinates (getBBox) and the matrix to the chart's (getCTM)."""
    import html
    import json
    import re
    svg = open(svg_path, encoding="utf-8").read()
    svg = svg[svg.index("<svg"):]
    page = os.path.join(tmp, os.path.basename(svg_path) + ".html")
    with open(page, "w", encoding="utf-8") as f:
        f.write("<!doctype html><html><head><meta charset='utf-8'></head><body style='margin:0'>"
                + svg + UI_MEASURE + "</body></html>")
    dom = chromium(tmp, "--dump-dom", "file://" + page)
    m = re.search(r'<pre id="measure">(.*?)</pre>', dom, re.S)
    assert m, "no measurements from Chromium for %s: %r" % (svg_path, dom[:300])
    return json.loads(html.unescape(m.group(1)))


def ui_corners(t, m=None):
    x, y, w, h = t["box"]
    a, b, c, d, e, f = m or t["m"]
    return [(a * px + c * py + e, b * px + d * py + f) for px, py in ((x, y), (x + w, y), (x, y + h), (x + w, y + h))]


def ui_overlap(s, t):
    """How far two laid-out texts overlap, in pixels (0: apart): in the frame of s when both
    are turned alike (labels at 45 degrees), else by their boxes in the chart."""
    if all(abs(p - q) < 1e-6 for p, q in zip(s["m"][:4], t["m"][:4])):
        a, b, c, d, e, f = s["m"]
        det = a * d - b * c
        inv = (d / det, -b / det, -c / det, a / det, (c * f - d * e) / det, (b * e - a * f) / det)
        pts = [(inv[0] * x + inv[2] * y + inv[4], inv[1] * x + inv[3] * y + inv[5]) for x, y in ui_corners(t)]
        x, y, w, h = s["box"]
        box1 = (x, y, x + w, y + h)
    else:
        p1 = ui_corners(s)
        box1 = (min(p[0] for p in p1), min(p[1] for p in p1), max(p[0] for p in p1), max(p[1] for p in p1))
        pts = ui_corners(t)
    box2 = (min(p[0] for p in pts), min(p[1] for p in pts), max(p[0] for p in pts), max(p[1] for p in pts))
    return max(0.0, min(min(box1[2], box2[2]) - max(box1[0], box2[0]), min(box1[3], box2[3]) - max(box1[1], box2[1])))


def ui_check_fit(tmp, out, files):
    """Each chart's texts, as Chromium lays them out, inside its viewBox and none over another
    (a pixel of slack: glyph boxes include the line's leading)."""
    import xml.etree.ElementTree as ET
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:  # a Chromium per core
        measured = list(pool.map(lambda name: ui_measure(tmp, os.path.join(out, name)), files))
    for name, laid_out in zip(files, measured):
        path = os.path.join(out, name)
        root = ET.parse(path).getroot()
        w, h = (float(v) for v in root.get("viewBox").split()[2:])
        texts = [t for t in laid_out if t["text"].strip()]
        assert texts, name
        for t in texts:
            pts = ui_corners(t)
            assert all(-0.5 <= x <= w + 0.5 and -0.5 <= y <= h + 0.5 for x, y in pts), \
                "%s: %s %r outside the %gx%g viewBox: %r" % (name, t["cls"], t["text"], w, h, pts)
        for i, s in enumerate(texts):
            for t in texts[i + 1:]:
                o = ui_overlap(s, t)
                assert o <= 1.5, "%s: %s %r and %s %r overlap by %.1f px" % (name, s["cls"], s["text"], t["cls"],
                                                                             t["text"], o)


def ui_real_shape(binary, tmp):
    """The demo's database made to look like a run over hundreds of real captures: 60 runs of
    long file names, 955 lower bounds at IW1 and a few hundred more, 22 exact IWs (one each of
    22 IWs), lower bounds at 30 more IWs, an application with a long name, 17 QUIC connections."""
    import sqlite3
    db = analyse(binary, [os.path.join(PCAPS, "demo.pcap")], tmp)
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    run = dict(con.execute("SELECT * FROM runs").fetchone())
    flow = dict(con.execute("SELECT * FROM flows WHERE s_iw_limit = 'cwnd' LIMIT 1").fetchone())
    con.execute("DELETE FROM flows")
    con.execute("DELETE FROM runs")
    runs = []
    for i in range(60):
        r = dict(run, id=run["id"] + i, started_us=run["started_us"] + i,
                 source="/srv/captures/probe-site-%02d/2024/05/%02d/uplink-mirror-port-eth%d.pcapng" % (i, i % 28 + 1, i))
        con.execute("INSERT INTO runs (%s) VALUES (%s)" % (", ".join(r), ", ".join("?" * len(r))), list(r.values()))
        runs.append(r["id"])
    rows_ = []

    def add(limit, segs, n, app="TLS", transport="tcp"):
        for _ in range(n):
            k = len(rows_)
            rows_.append(dict(flow, run_id=runs[k % 60], flow_key=k + 1, s_iw_limit=limit, s_iw_segs=segs,
                              s_iw_bytes=segs * 1448 - k % 7, rtt_us=1000 + 37 * k, app_proto=app,
                              transport=transport, s_iw_class=("IW%d" if limit == "cwnd" else ">=IW%d") % segs))
    add("app", 1, 900, app="HTTP")
    add("nagle", 1, 20)
    add("ambiguous", 1, 35)
    add("ambiguous", 2, 120)
    add("rwnd", 4, 6)
    for segs in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 20, 24, 32, 40, 48, 64):
        add("cwnd", segs, 1, app="TLS.AVeryLongApplicationNameThatNDPIMightReport.ForItsSubprotocol")
    for segs in range(65, 95):
        add("app", segs, 1, app="TLS.AVeryLongApplicationNameThatNDPIMightReport.ForItsSubprotocol")
    add("ambiguous", 3, 17, app="QUIC.Google", transport="quic")
    add("loss", 10, 70)
    for r in rows_:
        con.execute("INSERT INTO flows (%s) VALUES (%s)" % (", ".join(r), ", ".join("?" * len(r))), list(r.values()))
    con.commit()
    con.close()
    return db


@test("plots-fit-real-data-shapes", ("release", "asan"))
def t_ui_plot_fit(binary, tmp):
    """On data shaped like real captures' (60 runs of long file names, 1113 lower bounds beside
    22 exact IWs at 52 IWs, a long application name, QUIC rows), every text of every chart lies
    inside its viewBox and none overlaps another, as Chromium lays them out: the subtitle wraps,
    the legend fits, the IW labels are turned and thinned; the exact bars have their own axis
    (each at least 20 px tall); the subtitle counts the files instead of naming the first;
    QUIC rows are in no chart and said to be left out; `-o DIR//` prints paths without //."""
    import xml.etree.ElementTree as ET
    db = ui_real_shape(binary, tmp)
    out = os.path.join(tmp, "plots")
    _, listing, _ = run(["plot", db, "-o", out + "//"], binary, 0)
    files = ["iw_histogram.svg", "ff_bytes_cdf.svg", "syn_window.svg", "rtt_vs_ff.svg"]
    eq(listing.split(), [out + "/" + f for f in files], "the paths printed")
    charts = {f: ET.parse(os.path.join(out, f)).getroot() for f in files}
    hist = charts["iw_histogram.svg"]
    bars = ui_all(hist, "rect", "bar")
    exact = [b for b in bars if b.get("data-limit") == "cwnd"]
    eq(len(exact), 22, "exact bars")
    assert min(float(b.get("height")) for b in exact) >= 20, [b.get("height") for b in exact]
    eq(sum(int(b.get("data-value")) for b in bars), 900 + 20 + 35 + 120 + 6 + 22 + 30, "TCP flows in the histogram")
    assert not [b for b in bars if b.get("data-label") == "IW3" and b.get("data-limit") == "ambiguous"], \
        "QUIC's first flights drawn as TCP's"
    for name, root in charts.items():
        sub = "".join(ui_all(root, "text", "subtitle")[0].itertext())
        assert sub.startswith("60 files in 60 runs (probe "), (name, sub)
        assert "17 QUIC" in sub, (name, sub)
        eq(root.get("data-total"), str(len(rows(db))), name + " flows in the database")
    cdf = {e.get("data-series"): int(e.get("data-flows")) for e in ui_all(charts["ff_bytes_cdf.svg"], "polyline", "cdf")}
    eq(sorted(cdf.values()), [22 + 30, 35 + 120 + 20 + 6, 900], "CDF series (an application of 64 characters is one)")
    labels = ui_all(hist, "text", "cat")
    assert 10 <= len(labels) < 52, "IW labels: %d of 52 categories" % len(labels)
    ui_check_fit(tmp, out, files)


@test("plots-fit-shared-captures")
def t_ui_plot_fit_shared(binary, tmp):
    """Every file of ../shared/captures as one run (the files that cannot be read skipped):
    every chart's texts inside its viewBox and apart, the subtitle a count of files."""
    import glob
    import xml.etree.ElementTree as ET
    caps = sorted(p for p in glob.glob(os.path.join(ROOT, "..", "shared", "captures", "*", "*"))
                  if not p.endswith((".tsv", ".md")))
    if not caps:
        raise Skip("../shared/captures absent")
    db = os.path.join(tmp, "many.db")
    args = ["-q", "-o", db]
    for p in caps:
        args += ["-r", p]
    run(args, binary)
    out = os.path.join(tmp, "plots")
    run(["plot", db, "-o", out], binary, 0)
    files = ["iw_histogram.svg", "ff_bytes_cdf.svg", "syn_window.svg", "rtt_vs_ff.svg"]
    # runs.source holds every file whole (longer than the 4,095 characters it was once cut at):
    # the exact count, no "at least"
    assert len(" ".join(caps)) > 4095, len(" ".join(caps))
    for f in files:
        sub = "".join(ui_all(ET.parse(os.path.join(out, f)).getroot(), "text", "subtitle")[0].itertext())
        assert sub.startswith("%d files in 1 run" % len(caps)), (len(caps), sub)
    ui_check_fit(tmp, out, files)
    # a run written before whole sources (no digest) whose source is cut at 4,095 characters
    # lists fewer files than it read: "at least"; the same length with a digest is whole
    import sqlite3
    import shutil
    for digest, head in ((None, "at least "), ("0123456789abcdef", "")):
        old = os.path.join(tmp, "old-%s.db" % bool(digest))
        shutil.copy(db, old)
        con = sqlite3.connect(old)
        con.execute("UPDATE runs SET source = substr(source, 1, 4095), digest = ?", (digest,))
        con.commit()
        cut = con.execute("SELECT source FROM runs").fetchone()[0]
        con.close()
        eq(len(cut), 4095, "the source cut")
        out = os.path.join(tmp, "plots-old-%s" % bool(digest))
        run(["plot", old, "-o", out], binary, 0)
        sub = "".join(ui_all(ET.parse(os.path.join(out, files[0])).getroot(), "text", "subtitle")[0].itertext())
        assert sub.startswith("%s%d files in 1 run" % (head, len(cut.split()))), (head, len(cut.split()), sub)
