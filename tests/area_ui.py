# Output a user can trust (issue 22, items 8 and 9): the dashboard at 80x24 and wider, and the
# plots' axes, colours and titles. exec'd by tests/run.py with its globals (test, run, rows,
# analyse, eq, wait_for, Skip, craft, chromium, ...); names here start with ui_ so they do not
# shadow run.py's.
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
    """One HTTP exchange seen next to the client: handshake of round trip rtt, a request,
    segs full segments back to back, the client's ACK a round trip later and four more
    segments on its heels (a cwnd verdict, IW segs); with loss the third segment of the
    flight never shows (a hole: no verdict)."""
    mss = 1460
    n = len(req)
    c.c(0, "S", 0, 0, opts=craft.tcp_options(mss=mss))
    c.s(rtt, "SA", 0, 1, opts=craft.tcp_options(mss=mss))
    c.c(0.0001, "A", 1, 1)
    c.c(0.0001, "PA", 1, 1, payload=req)
    for i in range(segs):
        if not (loss and i == 2):
            c.s(rtt if i == 0 else 0.00001, "A", 1 + mss * i, 1 + n, payload=bytes(mss))
    c.c(rtt, "A", 1 + n, 1 + mss * (2 if loss else segs))
    for i in range(segs, segs + 4):
        c.s(0.00001, "A", 1 + mss * i, 1 + n, payload=bytes(mss))
    end = 1 + mss * (segs + 4)
    c.c(rtt, "A", 1 + n, 1 + mss * 2 if loss else end)
    c.c(0.001, "FA", 1 + n, end)
    c.s(0.001, "FA", end, 2 + n)
    c.c(0.001, "A", 2 + n, end + 1)
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
        ui_tmux("kill-server")


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
        ui_tmux("kill-server")
