/* One self-contained HTML file (run --html FILE): inline CSS and JS, no
 * network.  The run's results are embedded as a JS object; the script draws
 * an overview (case x unwinder, the worst verdict of the case's first
 * profile and stack size, each case linked to its heatmap), two filters
 * (cases that missed [expect]; cases with a chain that is not ok), a heatmap
 * per case (a row per unwinder, a column per sample point headed by its
 * place and instruction, each cell coloured by verdict, outlined where it
 * missed [expect]), a legend, and on a click, beside the case's heatmap, the
 * sample's story: instruction, the true and the emitted CFA row, the true
 * chain and the unwinder's, with perf's symbols.  "#cell=C:S:U" in the URL
 * (0-based case, sample and unwinder indices) opens that cell's story on
 * load, "&f=missed,nonok" sets the filters (tests/html_dom_check.py reads
 * the DOM). */
#include "harness/report/report.h"
#include "harness/version.h"

#include <errno.h>
#include <string.h>

/* a JS string literal safe inside <script>: '<' '>' '&' and bytes >= 0x7f escaped */
static void js_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20 || *p >= 0x7f || *p == '<' || *p == '>' || *p == '&')
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

static void js_chain(FILE *f, const uint64_t *a, int n, const char (*sym)[HX_SYM_LEN], int nsym)
{
	fputc('[', f);
	for (int i = 0; i < n; i++) {
		fprintf(f, "%s[\"0x%llx\",", i ? "," : "", (unsigned long long)a[i]);
		js_str(f, sym && i < nsym ? sym[i] : "");
		fputc(']', f);
	}
	fputc(']', f);
}

static void js_uw(FILE *f, const struct hx_sample_res *sr, const struct hx_uw_res *r)
{
	fprintf(f, "{v:\"%s\",m:%d,fb:%d,uf:%d,nl:%d,or:%d,cons:%d,dg:%d,dt:%d,stop:\"%s\",exp:",
		hx_verdict_name(r->j.v), r->match, r->fallback, r->has_faithful && !r->faithful,
		r->name_lost, r->uw && r->uw->ref == UW_REF_TRUTH, r->consistent, r->j.diverge_got,
		r->j.diverge_truth, uw_stop_name(r->r.stop));
	js_str(f, r->expected);
	fprintf(f, ",why:");
	js_str(f, r->fallback && r->r.fallback_why[0] ? r->r.fallback_why : r->r.why);
	fprintf(f, ",ch:");
	js_chain(f, r->r.addr, r->r.n, (const char (*)[HX_SYM_LEN])r->sym, r->nsym);
	fputc('}', f);
}

static void js_data(FILE *f, const struct hx_report *rp)
{
	fprintf(f, "var D={version:\"%s\",arch:", HX_VERSION);
	js_str(f, rp->arch);
	fprintf(f, ",uws:[");
	for (int u = 0; u < rp->o->nuw; u++) {
		fprintf(f, "%s", u ? "," : "");
		js_str(f, rp->o->unwinders[u]);
	}
	fprintf(f, "],cases:[");
	for (size_t i = 0; i < rp->n; i++) {
		const struct hx_case_res *c = &rp->cases[i];
		fprintf(f, "%s\n{name:", i ? "," : "");
		js_str(f, c->name);
		fprintf(f, ",file:");
		js_str(f, c->file);
		fprintf(f, ",about:");
		js_str(f, c->about);
		fprintf(f, ",result:\"%s\",problem:", c->skipped ? "skip" : c->pass ? "met" : "missed");
		js_str(f, c->problem);
		fprintf(f, ",s:[");
		for (size_t s = 0; s < c->nsamples; s++) {
			const struct hx_sample_res *sr = &c->samples[s];
			fprintf(f, "%s\n {w:", s ? "," : "");
			js_str(f, sr->where);
			fprintf(f, ",insn:");
			js_str(f, sr->insn);
			fprintf(f, ",prof:\"%s\",stack:%d,pc:\"0x%llx\",cfa:", sr->profile, sr->stack_size,
				(unsigned long long)sr->pc);
			js_str(f, sr->cfa_row);
			fprintf(f, ",tcfa:");
			js_str(f, sr->true_row);
			fprintf(f, ",d:%d,truth:", hx_term_default_sample(c, sr));
			js_chain(f, sr->truth, sr->nt, (const char (*)[HX_SYM_LEN])sr->tsym, sr->nt);
			fprintf(f, ",u:[");
			for (int u = 0; u < sr->nuw; u++) {
				fprintf(f, "%s", u ? "," : "");
				js_uw(f, sr, &sr->uw[u]);
			}
			fprintf(f, "]}");
		}
		fprintf(f, "]}");
	}
	fprintf(f, "]};\n");
}

static const char css[] =
	"body{font:14px/1.4 system-ui,sans-serif;margin:1em 2em;color:#222}\n"
	"h1{font-size:1.3em}h2{font-size:1.05em;margin:1.2em 0 .3em}\n"
	".res{font-size:.8em;padding:1px 6px;border-radius:3px;margin-left:.5em}\n"
	".res.met{background:#d4edda}.res.missed{background:#f8d7da}.res.skip{background:#fff3cd}\n"
	"table.hm,table.ov{border-collapse:separate;border-spacing:2px}\n"
	"table.hm th,table.ov th{font-weight:normal;font-size:.75em;text-align:left;padding-right:.5em;white-space:nowrap}\n"
	"table.hm th.col{writing-mode:vertical-rl;transform:rotate(180deg);height:15em;text-align:left;font-family:monospace}\n"
	"td.cell,td.ovc{width:18px;height:18px;border:2px solid transparent}td.cell{cursor:pointer}\n"
	"td.ovc{width:28px}td.cell.miss,td.ovc.miss{border-color:#000}td.cell.sel{outline:3px solid #06c}\n"
	".v-ok,.v-consistent{background:#4caf50}.v-truncated{background:#ffb74d}\n"
	".v-skipped{background:#fff176}.v-wrong{background:#e53935}.v-duplicate{background:#ba68c8}\n"
	".v-error{background:#9e9e9e}.v-inconsistent{background:#e57373}\n"
	".fb{background-image:linear-gradient(135deg,transparent 60%,#1565c0 60%)}\n"
	"#legend .li{display:inline-block;white-space:nowrap;margin:0 14px 2px 0}\n"
	"#legend span.sw{display:inline-block;width:14px;height:14px;vertical-align:middle;margin-right:4px}\n"
	"#filters{margin:.5em 0}#filters label{margin-right:1.5em}.hidden{display:none}\n"
	".pair{display:flex;align-items:flex-start;gap:1.5em}.slot{flex:1;min-width:24em}\n"
	"#detail{position:sticky;top:0;background:#f7f7f7;border:1px solid #ccc;padding:.5em 1em;"
	"font:12px/1.4 monospace;white-space:pre-wrap;min-height:3em}\n"
	".about{font-size:.85em;color:#555;max-width:60em}\n"
	"td.div{background:#fde0dc}table.ch td{padding:0 1em 0 0}\n";

/* The script: draws from D, opens a story on click or from the URL's #cell=, filters */
static const char js[] =
	"function el(t,c,x){var e=document.createElement(t);if(c)e.className=c;if(x!=null)e.textContent=x;return e}\n"
	"function vword(r){return r.or?(r.cons?'consistent':'inconsistent'):r.v}\n"
	"function fr(p){return p?p[0]+(p[1]?' ('+p[1]+')':''):''}\n"
	"var SEV={ok:0,consistent:0,truncated:1,skipped:2,duplicate:3,wrong:4,inconsistent:4,error:5};\n"
	"function story(ci,si,ui){var c=D.cases[ci],s=c&&c.s[si],r=s&&s.u[ui],d=document.getElementById('detail');\n"
	" if(!r)return;\n"
	" document.querySelectorAll('td.sel').forEach(function(x){x.classList.remove('sel')});\n"
	" var td=document.getElementById('c'+ci+'_'+si+'_'+ui);if(td)td.classList.add('sel');\n"
	" var slot=document.getElementById('slot'+ci);if(slot)slot.appendChild(d);\n"
	" d.textContent='';d.setAttribute('data-cell',ci+':'+si+':'+ui);\n"
	" var h=el('div','hd',c.name+'  '+s.w+'  '+D.uws[ui]);h.style.fontWeight='bold';d.appendChild(h);\n"
	" d.appendChild(el('div','insn','instruction: '+s.insn+'   pc '+s.pc+'   perf '+s.prof+', stack '+s.stack));\n"
	" d.appendChild(el('div','tcfa','true CFA row:    '+s.tcfa));\n"
	" d.appendChild(el('div','cfa','emitted CFA row: '+s.cfa+(s.tcfa!='-'&&s.tcfa!=s.cfa?'   (differs)':'')));\n"
	" d.appendChild(el('div','verdict','verdict: '+vword(r)+(r.fb?' fallback':'')+'   expected: '+(r.exp||'(none)')+\n"
	"  (r.m?'   met':'   MISSED')+(r.uf?'   unfaithful':'')+(r.nl?'   name-lost':'')));\n"
	" d.appendChild(el('div','stop',r.v=='ok'?'the chain is complete: every true frame, in order'+(r.fb&&r.why?'; fallback: '+r.why:''):\n"
	"  'why the chain ends: '+r.stop+(r.why?', '+r.why:'')));\n"
	" var t=el('table','ch'),hr=el('tr');hr.appendChild(el('th',null,'#'));hr.appendChild(el('th',null,'truth'));\n"
	" hr.appendChild(el('th',null,D.uws[ui]));t.appendChild(hr);\n"
	" for(var k=0;k<Math.max(s.truth.length,r.ch.length);k++){var tr=el('tr');tr.appendChild(el('td',null,k));\n"
	"  var a=el('td','truth',fr(s.truth[k])),b=el('td','got',fr(r.ch[k]));\n"
	"  if(k==r.dg)b.classList.add('div');if(k==r.dt)a.classList.add('div');tr.appendChild(a);tr.appendChild(b);t.appendChild(tr)}\n"
	" d.appendChild(t);if(r.dg>=0)d.appendChild(el('div','dv','first divergent frame: #'+r.dg))}\n"
	"function worst(c,ui){var w=null,miss=false;\n"
	" c.s.forEach(function(s){var r=s.u[ui];if(!r||!s.d)return;var v=vword(r);miss=miss||!r.m;if(w==null||SEV[v]>SEV[w])w=v});\n"
	" return {v:w,miss:miss}}\n"
	"function nonok(c){return c.s.some(function(s){return s.u.some(function(r){return vword(r)!='ok'&&vword(r)!='consistent'})})}\n"
	"function overview(){var t=document.getElementById('overview'),hr=el('tr');hr.appendChild(el('th',null,'case'));\n"
	" hr.appendChild(el('th',null,'[expect]'));D.uws.forEach(function(u){hr.appendChild(el('th',null,u))});t.appendChild(hr);\n"
	" D.cases.forEach(function(c,ci){var tr=el('tr','ovr');tr.setAttribute('data-case',c.name);\n"
	"  tr.setAttribute('data-missed',c.result=='missed'?1:0);tr.setAttribute('data-nonok',nonok(c)?1:0);\n"
	"  var th=el('th'),a=el('a',null,c.name);a.href='#case'+ci;th.appendChild(a);tr.appendChild(th);\n"
	"  tr.appendChild(el('td','res '+c.result,c.result));\n"
	"  D.uws.forEach(function(u,ui){var w=worst(c,ui),td=el('td','ovc'+(w.v?' v-'+w.v:'')+(w.miss?' miss':''));\n"
	"   td.setAttribute('data-worst',w.v||'');td.title=c.name+' '+u+': worst '+(w.v||'none')+(w.miss?', missed [expect]':'');\n"
	"   tr.appendChild(td)});t.appendChild(tr)})}\n"
	"function filter(){var m=document.getElementById('f-missed').checked,n=document.getElementById('f-nonok').checked;\n"
	" document.querySelectorAll('[data-missed]').forEach(function(e){\n"
	"  e.classList.toggle('hidden',(m&&e.getAttribute('data-missed')!='1')||(n&&e.getAttribute('data-nonok')!='1'))})}\n"
	"function draw(){var root=document.getElementById('cases');\n"
	" D.cases.forEach(function(c,ci){var sec=el('div','case');sec.id='case'+ci;sec.setAttribute('data-case',c.name);\n"
	"  sec.setAttribute('data-missed',c.result=='missed'?1:0);sec.setAttribute('data-nonok',nonok(c)?1:0);\n"
	"  var h=el('h2',null,c.name);var b=el('span','res '+c.result,c.result=='met'?\n"
	"  'met [expect]':c.result=='missed'?'MISSED [expect]':'skip');h.appendChild(b);sec.appendChild(h);\n"
	"  sec.appendChild(el('div','about',c.about+(c.problem?'  \\u2014 '+c.problem:'')));root.appendChild(sec);\n"
	"  if(!c.s.length)return;var pair=el('div','pair'),t=el('table','hm');t.setAttribute('data-case',c.name);\n"
	"  var hr=el('tr');hr.appendChild(el('th'));\n"
	"  c.s.forEach(function(s){var l=s.w+'  '+s.insn+(s.d?'':' ['+s.prof+(s.stack!=c.s[0].stack?', stack '+s.stack:'')+']');\n"
	"   var th=el('th','col',l);th.setAttribute('data-insn',s.insn);hr.appendChild(th)});t.appendChild(hr);\n"
	"  D.uws.forEach(function(u,ui){var tr=el('tr');tr.appendChild(el('th',null,u));\n"
	"   c.s.forEach(function(s,si){var r=s.u[ui];if(!r){tr.appendChild(el('td'));return}\n"
	"    var td=el('td','cell v-'+vword(r)+(r.m?'':' miss')+(r.fb?' fb':''));td.id='c'+ci+'_'+si+'_'+ui;\n"
	"    td.setAttribute('data-verdict',r.v);td.title=s.w+' '+s.insn+' '+u+': '+vword(r)+(r.m?'':' (missed [expect])');\n"
	"    td.onclick=function(){story(ci,si,ui)};tr.appendChild(td)});t.appendChild(tr)});\n"
	"  pair.appendChild(t);var slot=el('div','slot');slot.id='slot'+ci;pair.appendChild(slot);sec.appendChild(pair)})}\n"
	"function item(l,sw,text){var i=el('span','li');i.appendChild(sw);i.appendChild(el('span','lt',text));l.appendChild(i)}\n"
	"function legend(){var l=document.getElementById('legend');\n"
	" [['ok','ok: every true frame'],['consistent','consistent: the emitted CFI agrees with the truth'],\n"
	" ['truncated','truncated: correct prefix, stops early'],['skipped','skipped: a true frame missing'],\n"
	" ['wrong','wrong: a frame not in the truth'],['duplicate','duplicate'],['error','error: nothing beyond the ip'],\n"
	" ['inconsistent','inconsistent: the emitted CFI disagrees']].forEach(function(p){item(l,el('span','sw v-'+p[0]),p[1])});\n"
	" var m=el('span','sw cell miss');m.style.border='2px solid #000';item(l,m,'black border: missed [expect]');\n"
	" item(l,el('span','sw cell fb v-ok'),'blue corner: fallback (found without the emitted CFI)')}\n"
	"document.addEventListener('DOMContentLoaded',function(){legend();overview();draw();\n"
	" document.getElementById('f-missed').onchange=filter;document.getElementById('f-nonok').onchange=filter;\n"
	" var f=/[#&]f=([a-z,]+)/.exec(location.hash);if(f){f[1].split(',').forEach(function(k){\n"
	"  var x=document.getElementById('f-'+k);if(x)x.checked=true});filter()}\n"
	" var m=/#cell=(\\d+):(\\d+):(\\d+)/.exec(location.hash);if(m)story(+m[1],+m[2],+m[3])});\n";

int hx_report_html(FILE *f, const struct hx_report *rp)
{
	size_t pass = 0, fail = 0, skip = 0;
	for (size_t i = 0; i < rp->n; i++)
		rp->cases[i].skipped ? skip++ : rp->cases[i].pass ? pass++ : fail++;
	fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
		   "<title>jitunwind report (");
	hx_xml_str(f, rp->arch);
	fprintf(f, ")</title>\n<style>\n%s</style>\n</head><body>\n", css);
	fprintf(f, "<h1>jitunwind %s: %zu case(s) on ", HX_VERSION, rp->n);
	hx_xml_str(f, rp->arch);
	fprintf(f, "</h1>\n<p id=\"summary\">%zu met their [expect], %zu missed it, %zu skipped. "
		   "A cell is one sample point under one unwinder, coloured by its verdict; "
		   "&ldquo;met&rdquo; means the harness agrees with the case, not that perf unwinds the "
		   "code. Click a cell for the sample&rsquo;s story.</p>\n"
		   "<div id=\"legend\"></div>\n"
		   "<div id=\"filters\">show only cases: <label><input type=\"checkbox\" id=\"f-missed\"> "
		   "that missed [expect]</label><label><input type=\"checkbox\" id=\"f-nonok\"> with a chain "
		   "that is not ok</label></div>\n"
		   "<h2>Overview: the worst verdict per case and unwinder (first profile and stack size)</h2>\n"
		   "<table class=\"ov\" id=\"overview\"></table>\n<div id=\"detail\">(click a cell of a case "
		   "below for its story)</div>\n<div id=\"cases\"></div>\n<script>\n", pass, fail, skip);
	js_data(f, rp);
	fprintf(f, "%s</script>\n</body></html>\n", js);
	return ferror(f) ? -EIO : 0;
}
