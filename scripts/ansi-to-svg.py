#!/usr/bin/env python3
"""A terminal screen with SGR colour codes (tmux capture-pane -e) on stdin, as an SVG
image on stdout: one monospace cell a character, the 16 ANSI colours and the 256-colour
palette, bold, underline and reverse video."""
import html
import sys

BASE16 = [
    "#1e1e1e", "#cd3131", "#0dbc79", "#e5e510", "#2472c8", "#bc3fbc", "#11a8cd", "#e5e5e5",
    "#666666", "#f14c4c", "#23d18b", "#f5f543", "#3b8eea", "#d670d6", "#29b8db", "#ffffff",
]
FG, BG = "#d4d4d4", "#1e1e1e"


def palette(n):
    if n < 16:
        return BASE16[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return "#%02x%02x%02x" % (steps[n // 36], steps[(n // 6) % 6], steps[n % 6])
    v = 8 + 10 * (n - 232)
    return "#%02x%02x%02x" % (v, v, v)


def cells(line):
    st = {"fg": None, "bg": None, "bold": False, "ul": False, "rev": False}
    out = []
    i = 0
    while i < len(line):
        c = line[i]
        if c == "\x1b" and i + 1 < len(line) and line[i + 1] == "[":
            j = i + 2
            while j < len(line) and (line[j].isdigit() or line[j] in ";:"):
                j += 1
            if j < len(line) and line[j] == "m":
                ps = [int(p) if p.isdigit() else 0 for p in line[i + 2:j].split(";")]
                k = 0
                while k < len(ps):
                    p = ps[k]
                    if p == 0:
                        st = {"fg": None, "bg": None, "bold": False, "ul": False, "rev": False}
                    elif p == 1:
                        st["bold"] = True
                    elif p == 22:
                        st["bold"] = False
                    elif p == 4:
                        st["ul"] = True
                    elif p == 24:
                        st["ul"] = False
                    elif p == 7:
                        st["rev"] = True
                    elif p == 27:
                        st["rev"] = False
                    elif 30 <= p <= 37:
                        st["fg"] = BASE16[p - 30]
                    elif 90 <= p <= 97:
                        st["fg"] = BASE16[p - 90 + 8]
                    elif p == 39:
                        st["fg"] = None
                    elif 40 <= p <= 47:
                        st["bg"] = BASE16[p - 40]
                    elif 100 <= p <= 107:
                        st["bg"] = BASE16[p - 100 + 8]
                    elif p == 49:
                        st["bg"] = None
                    elif p in (38, 48) and k + 2 < len(ps) and ps[k + 1] == 5:
                        st["fg" if p == 38 else "bg"] = palette(ps[k + 2])
                        k += 2
                    elif p in (38, 48) and k + 4 < len(ps) and ps[k + 1] == 2:
                        st["fg" if p == 38 else "bg"] = "#%02x%02x%02x" % tuple(ps[k + 2:k + 5])
                        k += 4
                    k += 1
            i = j + 1
            continue
        out.append((c, dict(st)))
        i += 1
    return out


def main():
    lines = sys.stdin.read().split("\n")
    while lines and lines[-1] == "":
        lines.pop()
    cw, ch = 8.4, 17
    width = max((len(cells(l)) for l in lines), default=80)
    w, h = int(cw * width + 16), int(ch * len(lines) + 16)
    print(f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
          f'font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="14">')
    print(f'<rect width="100%" height="100%" fill="{BG}"/>')
    for y, line in enumerate(lines):
        row = cells(line)
        x = 0
        while x < len(row):
            c0, s0 = row[x]
            e = x + 1
            while e < len(row) and row[e][1] == s0:
                e += 1
            text = "".join(c for c, _ in row[x:e])
            fg, bg = s0["fg"] or FG, s0["bg"]
            if s0["rev"]:
                fg, bg = (s0["bg"] or BG), (s0["fg"] or FG)
            px, py = 8 + x * cw, 8 + y * ch
            if bg:
                print(f'<rect x="{px:.1f}" y="{py}" width="{cw * (e - x):.1f}" height="{ch}" fill="{bg}"/>')
            if text.strip():
                attrs = f'fill="{fg}"'
                if s0["bold"]:
                    attrs += ' font-weight="bold"'
                if s0["ul"]:
                    attrs += ' text-decoration="underline"'
                print(f'<text x="{px:.1f}" y="{py + 13}" {attrs} xml:space="preserve">'
                      f'{html.escape(text)}</text>')
            x = e
    print("</svg>")


main()
