#!/usr/bin/env python3
"""Check run --html's rendered DOM (chromium --dump-dom) against run --json.

usage: html_dom_check.py REPORT.json DOM.html CASE:SAMPLE:UNWINDER
Every sample point x unwinder of the JSON is one td.cell, whose data-verdict
and v-<verdict> class are the JSON's verdict; the legend is drawn; the story
of the cell opened by #cell=... shows that sample's instruction and its true
chain with perf's symbols.  Exit 0, or 1 with what differs."""
import html.parser, json, sys


class Dom(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.cells, self.case, self.legend, self.depth = [], None, 0, []
        self.detail, self.in_detail = '', 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = (a.get('class') or '').split()
        if tag == 'table' and 'hm' in cls:
            self.case = a.get('data-case')
        if tag == 'td' and 'cell' in cls and a.get('id'):
            self.cells.append((self.case, a['id'], a.get('data-verdict'), cls))
        if tag == 'span' and 'sw' in cls:
            self.legend += 1
        if tag == 'div' and a.get('id') == 'detail':
            self.detail_cell = a.get('data-cell')
            self.in_detail = 1
        elif self.in_detail and tag == 'div':
            self.in_detail += 1

    def handle_endtag(self, tag):
        if self.in_detail and tag == 'div':
            self.in_detail -= 1

    def handle_data(self, data):
        if self.in_detail:
            self.detail += data + '\n'


def main():
    rep = json.load(open(sys.argv[1]))
    dom = Dom()
    dom.feed(open(sys.argv[2], encoding='utf-8').read())
    want_cell = sys.argv[3]
    errs = []
    cases = {c['name']: c for c in rep['cases']}
    expected = sum(len(s['unwinders']) for c in rep['cases'] for s in c['samples'])
    if len(dom.cells) != expected:
        errs.append('%d cells, the JSON has %d sample x unwinder results' % (len(dom.cells), expected))
    for case, cid, verdict, cls in dom.cells:
        ci, si, ui = (int(x) for x in cid[1:].split('_'))
        c = cases.get(case)
        if c is None or si >= len(c['samples']):
            errs.append('%s: cell %s has no JSON sample' % (case, cid))
            continue
        names = list(c['samples'][si]['unwinders'])
        jv = c['samples'][si]['unwinders'][names[ui]]['verdict']
        if verdict != jv:
            errs.append('%s %s %s: cell says %s, JSON %s' % (case, c['samples'][si]['where'], names[ui], verdict, jv))
        oracle = 'consistent' in c['samples'][si]['unwinders'][names[ui]]
        if not oracle and 'v-' + jv not in cls:
            errs.append('%s: class %s lacks v-%s' % (cid, ' '.join(cls), jv))
    if dom.legend < 6:
        errs.append('legend: %d swatches' % dom.legend)
    if getattr(dom, 'detail_cell', None) != want_cell:
        errs.append('story: opened %s, asked %s' % (getattr(dom, 'detail_cell', None), want_cell))
    else:
        ci, si, ui = (int(x) for x in want_cell.split(':'))
        name = [cid for case, cid, v, c in dom.cells if cid == 'c%d_%d_%d' % (ci, si, ui)]
        case = [c for c, cid, v, k in dom.cells if cid == 'c%d_%d_%d' % (ci, si, ui)]
        s = cases[case[0]]['samples'][si] if case else None
        if not s:
            errs.append('story cell %s not drawn' % want_cell)
        else:
            if s['insn'] not in dom.detail:
                errs.append('story lacks the instruction %r' % s['insn'])
            for a, sym in zip(s['truth'], s.get('truth_symbols', [])):
                line = a + (' (%s)' % sym if sym else '')
                if line not in dom.detail:
                    errs.append('story lacks truth frame %r' % line)
    for e in errs[:20]:
        print('html_dom_check: ' + e)
    print('html_dom_check: %d cells checked, %d problem(s)' % (len(dom.cells), len(errs)))
    return 1 if errs else 0


sys.exit(main())
