/* The three-way handshake (RFC 9293 3.5) at the vantage point: who is the client, what each
 * SYN advertised, when each step passed, retransmissions, simultaneous open and port reuse. */
#include "handshake.h"

#include <string.h>

/* Ports below 1024 are services; otherwise the lower port is the likelier service. */
bool handshake_src_is_client(const struct pkt *p)
{
	if ((p->flags & (TH_SYN | TH_ACK)) == TH_SYN)
		return true;
	if ((p->flags & (TH_SYN | TH_ACK)) == (TH_SYN | TH_ACK))
		return false;
	bool s_low = p->sport < 1024, d_low = p->dport < 1024;
	if (s_low != d_low)
		return d_low;
	return p->sport > p->dport;
}

/* What side dir's SYN or SYN-ACK p advertised, and when (FT_C_SYN / FT_S_SYN); its option
 * layout goes to t's shared ones. */
static void record_syn(flow_table *t, struct flow *f, int dir, const struct pkt *p)
{
	struct syn_info *si = dir == 0 ? &f->c.syn : &f->s.syn;
	flow_set_time(f, dir == 0 ? FT_C_SYN : FT_S_SYN, p->ts_us);
	si->win = p->win;
	si->present = p->opt.present;
	si->mss = p->opt.mss;
	si->wscale = p->opt.wscale;
	si->tsval = p->opt.tsval;
	si->tsecr = p->opt.tsecr;
	si->ttl = p->ttl;
	si->quirks = p->quirks;
	si->payload = p->payload_len;
	struct syn_layout l;
	memset(&l, 0, sizeof(l));
	l.eol_pad = p->opt.eol_pad;
	l.len = p->opt.layout_len < SYN_LAYOUT_MAX ? p->opt.layout_len : SYN_LAYOUT_MAX;
	memcpy(l.kinds, p->opt.layout, l.len);
	flow_set_layout(t, f, dir, &l);
}

bool handshake_is_reuse(const struct flow *f, const struct pkt *p, int dir)
{
	uint8_t sa = p->flags & (TH_SYN | TH_ACK);
	const struct side *snd = dir == 0 ? &f->c : &f->s;
	if (sa == TH_SYN) {
		if (snd->syn_seen && p->seq == snd->isn)
			return false; /* a retransmitted SYN */
		/* the server's own SYN while the client's is unanswered: simultaneous open */
		if (dir == 1 && flow_seen(f, FT_SYN) && !flow_seen(f, FT_SYNACK) && !f->s.syn_seen &&
		    !f->s.pkts)
			return false;
		return true;
	}
	if (sa == (TH_SYN | TH_ACK) && dir == 1 && snd->syn_seen && p->seq != snd->isn)
		return f->c.fin || f->c.rst || f->s.fin || f->s.rst;
	return false;
}

void handshake_update(flow_table *t, struct flow *f, const struct pkt *p, int dir)
{
	struct side *snd = dir == 0 ? &f->c : &f->s;
	struct side *rcv = dir == 0 ? &f->s : &f->c;
	uint8_t sa = p->flags & (TH_SYN | TH_ACK);

	if (p->flags & TH_RST)
		snd->rst = true;
	if (p->flags & TH_FIN)
		snd->fin = true;

	if (sa == TH_SYN) {
		if (snd->syn_seen) {
			if (p->seq == snd->isn)
				snd->syn.retx++;
			return;
		}
		record_syn(t, f, dir, p);
		snd->isn = p->seq;
		snd->isn_known = true;
		snd->snd_max = p->seq + 1 + p->payload_len;
		if (dir == 0)
			flow_set_time(f, FT_SYN, p->ts_us);
		else
			f->simultaneous = true; /* both ends sent a bare SYN (RFC 9293 3.5, figure 8) */
		return;
	}
	if (sa == (TH_SYN | TH_ACK)) {
		if (dir == 1) {
			if (flow_seen(f, FT_SYNACK)) {
				if (p->seq == snd->isn)
					snd->syn.retx++;
				return;
			}
			flow_set_time(f, FT_SYNACK, p->ts_us);
			if (!f->simultaneous) {
				record_syn(t, f, dir, p);
				snd->isn = p->seq;
				snd->isn_known = true;
				snd->snd_max = p->seq + 1 + p->payload_len;
			}
		} else if (f->simultaneous && !flow_seen(f, FT_ACK)) {
			/* the client's SYN-ACK completes a simultaneous open */
			flow_set_time(f, FT_ACK, p->ts_us);
		}
		return;
	}
	/* The client's first segment acknowledging the server's SYN completes the handshake; a lost
	 * pure ACK is replaced by the first data segment, which acknowledges the same. With TCP
	 * Fast Open (RFC 7413) the server's data may precede it, and it acknowledges that too. */
	if (dir == 0 && flow_seen(f, FT_SYNACK) && !flow_seen(f, FT_ACK) && (p->flags & TH_ACK) &&
	    rcv->isn_known && (int32_t)(p->ack - (rcv->isn + 1)) >= 0 && (int32_t)(p->ack - rcv->snd_max) <= 0)
		flow_set_time(f, FT_ACK, p->ts_us);
}

enum handshake_kind handshake_kind(const struct flow *f)
{
	if (f->simultaneous)
		return HS_SIMULTANEOUS;
	if (flow_seen(f, FT_SYN)) {
		if (flow_seen(f, FT_SYNACK))
			return flow_seen(f, FT_ACK) ? HS_COMPLETE : HS_NO_ACK;
		/* the client acknowledged something: the SYN was answered out of sight (a
		 * capture of one direction), not unanswered */
		return f->s.rst ? HS_REFUSED : f->c.ack_seen ? HS_NO_SYNACK : HS_SYN_ONLY;
	}
	if (flow_seen(f, FT_SYNACK))
		return HS_NO_SYN;
	return HS_NONE;
}
