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

static void record_syn(struct syn_info *si, const struct pkt *p)
{
	si->ts_us = p->ts_us;
	si->win = p->win;
	si->present = p->opt.present;
	si->mss = p->opt.mss;
	si->wscale = p->opt.wscale;
	si->tsval = p->opt.tsval;
	si->tsecr = p->opt.tsecr;
	si->ttl = p->ttl;
	si->quirks = p->quirks;
	si->payload = p->payload_len;
	si->eol_pad = p->opt.eol_pad;
	si->layout_len = p->opt.layout_len < SYN_LAYOUT_MAX ? p->opt.layout_len : SYN_LAYOUT_MAX;
	memcpy(si->layout, p->opt.layout, si->layout_len);
}

bool handshake_is_reuse(const struct flow *f, const struct pkt *p, int dir)
{
	uint8_t sa = p->flags & (TH_SYN | TH_ACK);
	const struct side *snd = dir == 0 ? &f->c : &f->s;
	if (sa == TH_SYN) {
		if (snd->syn.ts_us && p->seq == snd->isn)
			return false; /* a retransmitted SYN */
		/* the server's own SYN while the client's is unanswered: simultaneous open */
		if (dir == 1 && f->syn_us && !f->synack_us && !f->s.syn.ts_us && !f->s.pkts)
			return false;
		return true;
	}
	if (sa == (TH_SYN | TH_ACK) && dir == 1 && snd->syn.ts_us && p->seq != snd->isn)
		return f->c.fin || f->c.rst || f->s.fin || f->s.rst;
	return false;
}

void handshake_update(struct flow *f, const struct pkt *p, int dir)
{
	struct side *snd = dir == 0 ? &f->c : &f->s;
	struct side *rcv = dir == 0 ? &f->s : &f->c;
	uint8_t sa = p->flags & (TH_SYN | TH_ACK);

	if (p->flags & TH_RST)
		snd->rst = true;
	if (p->flags & TH_FIN)
		snd->fin = true;

	if (sa == TH_SYN) {
		if (snd->syn.ts_us) {
			if (p->seq == snd->isn)
				snd->syn.retx++;
			return;
		}
		record_syn(&snd->syn, p);
		snd->isn = p->seq;
		snd->isn_known = true;
		snd->snd_max = p->seq + 1 + p->payload_len;
		if (dir == 0)
			f->syn_us = p->ts_us;
		else
			f->simultaneous = true; /* both ends sent a bare SYN (RFC 9293 3.5, figure 8) */
		return;
	}
	if (sa == (TH_SYN | TH_ACK)) {
		if (dir == 1) {
			if (f->synack_us) {
				if (p->seq == snd->isn)
					snd->syn.retx++;
				return;
			}
			f->synack_us = p->ts_us;
			if (!f->simultaneous) {
				record_syn(&snd->syn, p);
				snd->isn = p->seq;
				snd->isn_known = true;
				snd->snd_max = p->seq + 1 + p->payload_len;
			}
		} else if (f->simultaneous && !f->ack_us) {
			f->ack_us = p->ts_us; /* the client's SYN-ACK completes a simultaneous open */
		}
		return;
	}
	/* The client's first segment acknowledging the server's SYN completes the handshake; a lost
	 * pure ACK is replaced by the first data segment, which acknowledges the same. With TCP
	 * Fast Open (RFC 7413) the server's data may precede it, and it acknowledges that too. */
	if (dir == 0 && f->synack_us && !f->ack_us && (p->flags & TH_ACK) && rcv->isn_known &&
	    (int32_t)(p->ack - (rcv->isn + 1)) >= 0 && (int32_t)(p->ack - rcv->snd_max) <= 0)
		f->ack_us = p->ts_us;
}

enum handshake_kind handshake_kind(const struct flow *f)
{
	if (f->simultaneous)
		return HS_SIMULTANEOUS;
	if (f->syn_us) {
		if (f->synack_us)
			return f->ack_us ? HS_COMPLETE : HS_NO_ACK;
		/* the client acknowledged something: the SYN was answered out of sight (a
		 * capture of one direction), not unanswered */
		return f->s.rst ? HS_REFUSED : f->c.ack_seen ? HS_NO_SYNACK : HS_SYN_ONLY;
	}
	if (f->synack_us)
		return HS_NO_SYN;
	return HS_NONE;
}
