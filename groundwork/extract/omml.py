"""Office Math (OMML, the m: elements in DOCX and PPTX) as LaTeX.

Read as plain text, an equation loses what makes it one: the fraction
x = (-b ± √(b²-4ac)) / 2a came out as "x=-b±b2-4ac2a", a sum's limits ran
into its terms, and three equations in one paragraph into each other. LaTeX
keeps the structure in text that readers, search and language models know.

The mapping follows the OMML schema (ECMA-376 part 1, 22.1): each structure
(fraction, scripts, radical, delimiter, n-ary operator, function, limit,
accent, bar, group character, equation array, matrix) becomes the LaTeX
construct drawing it; runs' symbols become LaTeX commands where LaTeX has
one. Unknown elements are read for their children, so nothing is dropped.
Depth is bounded: a hostile document may nest structures thousands deep.
"""

from __future__ import annotations

import re
from typing import Any

M = "http://schemas.openxmlformats.org/officeDocument/2006/math"
MAX_DEPTH = 64  # no real equation nests this deep


def _m(name: str) -> str:
    return f"{{{M}}}{name}"


_VAL = _m("val")

# symbols a math run may hold and the LaTeX commands drawing them
_SYMBOLS = {
    "α": r"\alpha", "β": r"\beta", "γ": r"\gamma", "δ": r"\delta", "ε": r"\epsilon",
    "ϵ": r"\epsilon", "ζ": r"\zeta", "η": r"\eta", "θ": r"\theta", "ϑ": r"\vartheta",
    "ι": r"\iota", "κ": r"\kappa", "λ": r"\lambda", "μ": r"\mu", "ν": r"\nu", "ξ": r"\xi",
    "π": r"\pi", "ϖ": r"\varpi", "ρ": r"\rho", "ϱ": r"\varrho", "σ": r"\sigma",
    "ς": r"\varsigma", "τ": r"\tau", "υ": r"\upsilon", "φ": r"\phi", "ϕ": r"\phi",
    "χ": r"\chi", "ψ": r"\psi", "ω": r"\omega", "Γ": r"\Gamma", "Δ": r"\Delta",
    "Θ": r"\Theta", "Λ": r"\Lambda", "Ξ": r"\Xi", "Π": r"\Pi", "Σ": r"\Sigma",
    "Υ": r"\Upsilon", "Φ": r"\Phi", "Ψ": r"\Psi", "Ω": r"\Omega",
    "±": r"\pm", "∓": r"\mp", "×": r"\times", "÷": r"\div", "·": r"\cdot", "⋅": r"\cdot",
    "∗": "*", "∘": r"\circ", "−": "-", "–": "-", "≤": r"\leq", "≥": r"\geq", "≠": r"\neq",
    "≈": r"\approx", "≡": r"\equiv", "∼": r"\sim", "≅": r"\cong", "∝": r"\propto",
    "∞": r"\infty", "∂": r"\partial", "∇": r"\nabla", "∈": r"\in", "∉": r"\notin",
    "⊂": r"\subset", "⊆": r"\subseteq", "⊃": r"\supset", "⊇": r"\supseteq", "∩": r"\cap",
    "∪": r"\cup", "∧": r"\wedge", "∨": r"\vee", "¬": r"\neg", "∀": r"\forall",
    "∃": r"\exists", "∅": r"\emptyset", "→": r"\rightarrow", "←": r"\leftarrow",
    "↔": r"\leftrightarrow", "⇒": r"\Rightarrow", "⇐": r"\Leftarrow", "⇔": r"\Leftrightarrow",
    "…": r"\ldots", "⋯": r"\cdots", "′": "'", "″": "''", "°": r"^{\circ}", "ℏ": r"\hbar",
    "ℓ": r"\ell", "ℝ": r"\mathbb{R}", "ℕ": r"\mathbb{N}", "ℤ": r"\mathbb{Z}",
    "ℚ": r"\mathbb{Q}", "ℂ": r"\mathbb{C}", "⟨": r"\langle", "⟩": r"\rangle",
    "‖": r"\|", "√": r"\surd",
}  # fmt: skip
_ESCAPED = {"#": r"\#", "$": r"\$", "%": r"\%", "&": r"\&", "{": r"\{", "}": r"\}", "\\": "\\\\"}
_NARY = {
    "∑": r"\sum", "∏": r"\prod", "∐": r"\coprod", "∫": r"\int", "∬": r"\iint",
    "∭": r"\iiint", "∮": r"\oint", "∯": r"\oiint", "∰": r"\oiiint", "⋃": r"\bigcup",
    "⋂": r"\bigcap", "⋀": r"\bigwedge", "⋁": r"\bigvee", "⨁": r"\bigoplus",
    "⨂": r"\bigotimes",
}  # fmt: skip
_ACCENTS = {
    "\u0302": r"\hat", "\u0303": r"\tilde", "\u0307": r"\dot", "\u0308": r"\ddot",
    "\u20d7": r"\vec", "\u0304": r"\bar", "\u0305": r"\bar", "\u0306": r"\breve",
    "\u030c": r"\check", "\u0301": r"\acute", "\u0300": r"\grave", "\u20d6": r"\overleftarrow",
}  # fmt: skip
_FUNCTIONS = {
    "sin", "cos", "tan", "cot", "sec", "csc", "arcsin", "arccos", "arctan", "sinh",
    "cosh", "tanh", "coth", "log", "ln", "lg", "exp", "lim", "liminf", "limsup", "max",
    "min", "sup", "inf", "det", "dim", "ker", "deg", "gcd", "arg", "Pr", "hom",
}  # fmt: skip
_DELIMITERS = {"{": r"\{", "}": r"\}", "|": "|", "‖": r"\|", "⟨": r"\langle", "⟩": r"\rangle",
               "⌊": r"\lfloor", "⌋": r"\rfloor", "⌈": r"\lceil", "⌉": r"\rceil", "": "."}  # fmt: skip
_COMMAND_END = re.compile(r"\\[A-Za-z]+$")


def _join(parts: list[str]) -> str:
    """Pieces of LaTeX one after another: a command ending a piece keeps a
    space before a letter that follows it (\\pi r, not \\pir)."""
    out = ""
    for part in parts:
        if out and part and part[0].isalpha() and _COMMAND_END.search(out):
            out += " "
        out += part
    return out


def _prop(element: Any, properties: str, name: str) -> str | None:
    """A property's m:val (m:fPr/m:type and the like), None when absent."""
    holder = element.find(_m(properties))
    if holder is None:
        return None
    found = holder.find(_m(name))
    if found is None:
        return None
    return found.get(_VAL, "")


def _on(value: str | None) -> bool:
    return value is not None and value.lower() not in ("0", "off", "false")


# binary operators and relations are set apart by spaces, as people write them
_SPACED = {
    r"\pm", r"\mp", r"\times", r"\div", r"\cdot", r"\circ", r"\leq", r"\geq", r"\neq",
    r"\approx", r"\equiv", r"\sim", r"\cong", r"\propto", r"\in", r"\notin", r"\subset",
    r"\subseteq", r"\supset", r"\supseteq", r"\cap", r"\cup", r"\wedge", r"\vee",
    r"\rightarrow", r"\leftarrow", r"\leftrightarrow", r"\Rightarrow", r"\Leftarrow",
    r"\Leftrightarrow",
}  # fmt: skip


def _symbol(char: str) -> str:
    command = _SYMBOLS.get(char)
    if command is None:
        return _ESCAPED.get(char, char)
    return f" {command} " if command in _SPACED else command


def _is_normal(run: Any) -> bool:
    properties = run.find(_m("rPr"))
    return properties is not None and properties.find(_m("nor")) is not None


def _run(text: str, normal: bool) -> str:
    """Math runs' text (neighbouring runs read together: Word splits words
    across runs). "Normal text" (m:nor) holding words is \\text{...}; words
    apart stay apart (a space between two words), other spacing is LaTeX's."""
    if normal and " " in text.strip():
        return r"\text{" + "".join(_ESCAPED.get(c, c) for c in text) + "}"
    out: list[str] = []
    for index, char in enumerate(text):
        if char == " ":
            before, after = text[index - 1 : index], text[index + 1 : index + 2]
            if before.isalnum() and after.isalnum():
                out.append(r"\ ")
            continue
        out.append(_symbol(char))
    return _join(out)


def omml_latex(element: Any) -> str:
    """An m:oMath (or any OMML element) as LaTeX, without math delimiters."""
    return re.sub(r" {2,}", " ", _latex(element, 0)).strip()


def _children(element: Any, depth: int) -> str:
    parts: list[str] = []
    runs: list[str] = []
    normal = False
    for child in element:
        if child.tag == _m("r") and (not runs or _is_normal(child) == normal):
            normal = _is_normal(child)
            runs.append("".join(t.text or "" for t in child.iter(_m("t"))))
            continue
        if runs:
            parts.append(_run("".join(runs), normal))
            runs = []
        if child.tag == _m("r"):
            normal = _is_normal(child)
            runs.append("".join(t.text or "" for t in child.iter(_m("t"))))
            continue
        parts.append(_latex(child, depth + 1))
    if runs:
        parts.append(_run("".join(runs), normal))
    return _join(parts)


def _part(element: Any, name: str, depth: int) -> str:
    found = element.find(_m(name))
    return "" if found is None else _children(found, depth)


def _group(latex: str) -> str:
    """A base that is more than one symbol is braced before its scripts."""
    if len(latex) == 1 or re.fullmatch(r"\\[A-Za-z]+|\{.*\}", latex):
        return latex
    return "{" + latex + "}"


def _latex(element: Any, depth: int) -> str:  # noqa: C901 - one branch per OMML structure
    if depth > MAX_DEPTH or not isinstance(element.tag, str):
        return ""
    tag = element.tag
    if not tag.startswith(f"{{{M}}}"):
        return ""  # w:rPr and the like inside math: formatting, no content
    name = tag[len(M) + 2 :]
    if name.endswith("Pr") or name == "ctrlPr":
        return ""
    if name == "r":
        return _run("".join(t.text or "" for t in element.iter(_m("t"))), _is_normal(element))
    if name == "t":  # outside a run
        return "".join(_ESCAPED.get(c, c) for c in element.text or "")
    if name == "f":
        num, den = _part(element, "num", depth), _part(element, "den", depth)
        kind = _prop(element, "fPr", "type")
        if kind == "noBar":
            return r"\genfrac{}{}{0pt}{}{" + num + "}{" + den + "}"
        if kind == "lin":
            return f"{num}/{den}"
        return r"\frac{" + num + "}{" + den + "}"
    if name == "sSup":
        return _group(_part(element, "e", depth)) + "^{" + _part(element, "sup", depth) + "}"
    if name == "sSub":
        return _group(_part(element, "e", depth)) + "_{" + _part(element, "sub", depth) + "}"
    if name == "sSubSup":
        base = _group(_part(element, "e", depth))
        return (
            base + "_{" + _part(element, "sub", depth) + "}^{" + _part(element, "sup", depth) + "}"
        )
    if name == "sPre":
        sub, sup = _part(element, "sub", depth), _part(element, "sup", depth)
        scripts = "{}" + ("_{" + sub + "}" if sub else "") + ("^{" + sup + "}" if sup else "")
        return scripts + _part(element, "e", depth)
    if name == "rad":
        degree = _part(element, "deg", depth)
        hidden = _on(_prop(element, "radPr", "degHide"))
        root = r"\sqrt" + (f"[{degree}]" if degree and not hidden else "")
        return root + "{" + _part(element, "e", depth) + "}"
    if name == "d":
        begin = _prop(element, "dPr", "begChr")
        end = _prop(element, "dPr", "endChr")
        separator = _prop(element, "dPr", "sepChr")
        begin = "(" if begin is None else begin
        end = ")" if end is None else end
        items = [_children(e, depth) for e in element.findall(_m("e"))]
        inner = (separator if separator is not None else "|").join(items)
        return (
            r"\left" + _DELIMITERS.get(begin, begin) + inner + r"\right" + _DELIMITERS.get(end, end)
        )
    if name == "nary":
        symbol = _prop(element, "naryPr", "chr")
        operator = _NARY.get(symbol if symbol is not None else "∫", symbol or r"\int")
        out = operator
        if not _on(_prop(element, "naryPr", "subHide")):
            sub = _part(element, "sub", depth)
            out += "_{" + sub + "}" if sub else ""
        if not _on(_prop(element, "naryPr", "supHide")):
            sup = _part(element, "sup", depth)
            out += "^{" + sup + "}" if sup else ""
        return _join([out, _part(element, "e", depth)])
    if name == "func":
        function = _part(element, "fName", depth)
        plain = function.replace(r"\ ", " ").strip()
        if plain in _FUNCTIONS:
            function = "\\" + plain
        elif re.fullmatch(r"[A-Za-z]+", plain):
            function = r"\operatorname{" + plain + "}"
        return _join([function, _part(element, "e", depth)])
    if name in ("limLow", "limUpp"):
        base_element = element.find(_m("e"))
        base = _part(element, "e", depth)
        limit = _part(element, "lim", depth)
        under = name == "limLow"
        brace = base_element.find(_m("groupChr")) if base_element is not None else None
        if brace is not None:
            return base + ("_{" if under else "^{") + limit + "}"
        plain = base.replace(r"\ ", " ").strip().lstrip("\\")
        if plain in _FUNCTIONS:
            return "\\" + plain + ("_{" if under else "^{") + limit + "}"
        if re.fullmatch(r"[A-Za-z]{2,}", plain):  # a word under a limit names an operator
            base = r"\operatorname{" + plain + "}"
        if re.fullmatch(r"\\operatorname\{[^{}]*\}", base):
            return base + ("_{" if under else "^{") + limit + "}"
        command = r"\underset" if under else r"\overset"
        return command + "{" + limit + "}{" + base + "}"
    if name == "acc":
        accent = _prop(element, "accPr", "chr")
        command = _ACCENTS.get("\u0302" if accent is None else accent, r"\hat")
        return command + "{" + _part(element, "e", depth) + "}"
    if name == "bar":
        top = (_prop(element, "barPr", "pos") or "bot") == "top"
        return (r"\overline{" if top else r"\underline{") + _part(element, "e", depth) + "}"
    if name == "groupChr":
        symbol = _prop(element, "groupChrPr", "chr")
        position = _prop(element, "groupChrPr", "pos") or "bot"
        content = _part(element, "e", depth)
        if symbol in (None, "\u23df") or (symbol == "\u23de" and position == "bot"):
            return r"\underbrace{" + content + "}"
        if symbol == "\u23de":
            return r"\overbrace{" + content + "}"
        command = r"\overset" if position == "top" else r"\underset"
        return command + "{" + _SYMBOLS.get(symbol, symbol) + "}{" + content + "}"
    if name == "eqArr":
        rows = [_children(e, depth) for e in element.findall(_m("e"))]
        if len(rows) == 1:
            return rows[0]
        return r"\begin{aligned}" + r" \\ ".join(rows) + r"\end{aligned}"
    if name == "m":
        rows = [
            " & ".join(_children(e, depth) for e in row.findall(_m("e")))
            for row in element.findall(_m("mr"))
        ]
        return r"\begin{matrix}" + r" \\ ".join(rows) + r"\end{matrix}"
    # oMath, oMathPara, e, num, box, borderBox, phant and the rest: their content
    return _children(element, depth)
