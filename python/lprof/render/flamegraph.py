"""Self-contained SVG flame graph (no external script): rectangles come from
the C folder (_lprof.fold_rows); names on hover (<title>), a search box
driven by a small embedded script."""
from xml.sax.saxutils import escape

WIDTH = 1200
ROW = 16
MIN_PX = 0.1
# frames narrower than this share of the total would be under MIN_PX wide
MIN_FRACTION = MIN_PX / WIDTH

_SCRIPT = """
function search(){var t=prompt('Search (regex)');if(t===null)return;var re=new RegExp(t);
var n=0,g=document.getElementsByClassName('f');for(var i=0;i<g.length;i++){
var ti=g[i].getElementsByTagName('title')[0].textContent;var r=g[i].getElementsByTagName('rect')[0];
if(t&&re.test(ti)){r.setAttribute('fill','#e0f');n++;}else{r.setAttribute('fill',r.getAttribute('data-c'));}}
document.getElementById('matched').textContent=t?('matched '+n):'';}
"""


def _color(name):
    h = 0
    for ch in name:
        h = (h * 31 + ord(ch)) & 0xFFFFFFFF
    return "rgb(%d,%d,%d)" % (205 + h % 50, 80 + (h >> 8) % 120, (h >> 16) % 60)


def write_svg(names, rects, total, out_path, title="lprof", unit="us"):
    """rects: (depth, name id, x, width) from _lprof.fold_rows; total: their scale."""
    depth = 1 + max((r[0] for r in rects), default=0)
    height = (depth + 3) * ROW
    scale = (WIDTH - 20) / total if total else 0
    out = ['<?xml version="1.0" standalone="no"?>',
           f'<svg version="1.1" width="{WIDTH}" height="{height}" xmlns="http://www.w3.org/2000/svg">',
           f'<script type="text/ecmascript"><![CDATA[{_SCRIPT}]]></script>',
           '<style>text{font-family:monospace;font-size:11px}.f:hover rect{stroke:#000}</style>',
           f'<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="#f8f8f8"/>',
           f'<text x="10" y="14">{escape(title)} (total {total} {escape(unit)})</text>',
           '<text x="1100" y="14" onclick="search()" style="cursor:pointer">Search</text>',
           '<text id="matched" x="900" y="14"></text>']
    for d, name_id, x, w in rects:
        name = names[name_id]
        px, pw = 10 + x * scale, w * scale
        y = height - (d + 2) * ROW
        pct = 100.0 * w / total if total else 0
        label = escape(name)
        color = _color(name)
        chars = int(pw / 7)
        shown = escape(name if len(name) <= chars else name[:max(chars - 2, 0)] + "..") if chars >= 3 else ""
        out.append(f'<g class="f"><title>{label} ({w} {escape(unit)}, {pct:.2f}%)</title>'
                   f'<rect x="{px:.1f}" y="{y}" width="{pw:.1f}" height="{ROW - 1}" fill="{color}" '
                   f'data-c="{color}" rx="2"/>'
                   f'<text x="{px + 3:.1f}" y="{y + 11}">{shown}</text></g>')
    out.append("</svg>")
    with open(out_path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(out) + "\n")
