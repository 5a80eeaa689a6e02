"""Realistic boxed-only completions, written for the boxed-answer grader tests: (gold, completion).

RIGHT must be graded correct, WRONG must not. None carries an `<answer>` tag.
"""

THINK = r"""<think>
Let me work through this carefully.
</think>
"""
RIGHT = [
    ("\\frac{3}{4}", "The probability is $\\frac{6}{8}$, which simplifies.\n\nTherefore the answer is $\\boxed{0.75}$."),
    ("0.5", "Half of the area: $\\boxed{\\frac{1}{2}}$"),
    ("\\frac{1}{3}", THINK + "So $p = \\boxed{\\dfrac{1}{3}}$."),
    ("\\frac{7}{2}", "We get $x = \\boxed{3.5}$."),
    ("12.5\\%", "The increase is $\\boxed{12.5\\%}$."),
    ("25\\%", "So the discount was $\\boxed{25\\%}$."),
    ("1000000", "The total is $\\boxed{1{,}000{,}000}$."),
    ("12345", "Summing gives $\\boxed{12,345}$."),
    ("-7", "Thus $m = \\boxed{−7}$."),  # unicode minus
    ("-\\frac{1}{2}", "The slope is $\\boxed{-0.5}$."),
    ("\\{1, 2, 3\\}", "The solution set is $\\boxed{\\{3, 1, 2\\}}$."),
    ("(-\\infty, 2) \\cup (3, \\infty)", "Hence $x \\in \\boxed{(3, \\infty) \\cup (-\\infty, 2)}$."),
    ("[0, 1]", "The range is $\\boxed{[0,1]}$."),
    ("\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}", "$$\\boxed{\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}}$$"),
    ("\\begin{pmatrix} 2 \\\\ -1 \\end{pmatrix}", "The vector is $\\boxed{\\begin{pmatrix} 2 \\\\ -1 \\end{pmatrix}}$."),
    ("\\text{Yes}", "Such a function exists, so the answer is $\\boxed{\\text{Yes}}$."),
    ("Yes", "$\\boxed{\\text{Yes}}$"),
    ("2\\sqrt{2}", "The distance is $\\boxed{\\sqrt{8}}$."),
    ("\\sqrt{3}/2", "So $\\sin 60^\\circ = \\boxed{\\frac{\\sqrt{3}}{2}}$."),
    ("\\pi", "The area equals $\\boxed{\\pi}$."),
    ("2\\pi", "Circumference: $\\boxed{2 \\pi}$."),
    ("\\frac{\\pi}{4}", "Angle $\\theta = \\boxed{\\pi/4}$."),
    ("x^2 + 2x + 1", "Expanding, $\\boxed{(x+1)^2}$."),
    ("x^2-1", "$f(x) = \\boxed{(x-1)(x+1)}$"),
    ("3", "There are $\\boxed{3}$ solutions."),
    ("3", "The answer is \\boxed{3}."),
    ("42", "First guess $\\boxed{40}$ was wrong; rechecking, the answer is $\\boxed{42}$."),
    ("5", THINK + "\\boxed{5}"),
    ("5", "<think>maybe it is \\boxed{4}</think>\nNo, the count is $\\boxed{5}$."),
    ("2", "$x = \\boxed{2}$"),
    ("2, 3", "The roots are $\\boxed{2, 3}$."),
    ("2, 3", "The roots are $\\boxed{3, 2}$."),
    ("(1, 2)", "The point is $\\boxed{(1,2)}$."),
    ("10", "The answer is $\\boxed{10.0}$."),
    ("0.2", "So $\\boxed{\\frac{1}{5}}$."),
    ("\\frac{2}{3}", "Therefore $\\boxed{\\frac{4}{6}}$."),
    ("1.5", "$\\boxed{\\frac{3}{2}}$"),
    ("e^2", "The limit is $\\boxed{e^{2}}$."),
    ("\\ln 2", "The integral evaluates to $\\boxed{\\log 2}$."),  # missed: math-verify does not read log as ln
    ("4", "$$\\boxed{2^2}$$"),
    ("\\infty", "The series diverges, so the sum is $\\boxed{\\infty}$."),
    ("90", "The angle is $\\boxed{90^\\circ}$."),
    ("x = 4", "Solving, $\\boxed{x=4}$."),
    ("4", "Solving, $\\boxed{x = 4}$."),
    ("5", "The value is \\fbox{5}."),
    ("-3", "so $y=\\boxed{-3}$"),
    ("\\frac{1}{\\sqrt{2}}", "$\\boxed{\\frac{\\sqrt{2}}{2}}$"),
    ("1/4", "Probability $\\boxed{0.25}$"),
    ("100", "After simplification we find $\\boxed{100}$ \\text{ apples}."),
    ("6", "The number of ways is\n\\[\n\\boxed{6}\n\\]"),
    ("a+b", "$\\boxed{b+a}$"),
    ("\\frac{n(n+1)}{2}", "The sum is $\\boxed{\\frac{n^2+n}{2}}$."),
    ("0", "So the determinant is $\\boxed{0}$."),
    ("2^{10}", "There are $\\boxed{1024}$ subsets."),
    ("3 + 4i", "$z = \\boxed{3+4i}$"),
    ("720", "$6! = \\boxed{720}$"),
    ("\\dfrac{5}{12}", "$\\boxed{\\tfrac{5}{12}}$"),
    ("1.25", "$\\boxed{\\frac{5}{4}}$"),
    ("(0, 1)", "The interval is $\\boxed{(0,1)}$."),
    ("\\{0\\}", "$\\boxed{\\{0\\}}$"),
]
WRONG = [
    ("\\frac{3}{4}", "So the answer is $\\boxed{0.7}$."),
    ("1/3", "$\\boxed{0.333}$"),
    ("1/3", "$\\boxed{0.333333}$"),  # float_rounding=10 rejects 6-decimal rounding
    ("12.5\\%", "$\\boxed{13\\%}$"),
    ("-7", "$\\boxed{7}$"),
    ("\\{1, 2, 3\\}", "$\\boxed{\\{1, 2\\}}$"),
    ("[0, 1]", "$\\boxed{(0, 1)}$"),
    ("(0, 1)", "$\\boxed{[0, 1]}$"),
    ("\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}", "$\\boxed{\\begin{pmatrix}1&3\\\\2&4\\end{pmatrix}}$"),
    ("\\text{Yes}", "$\\boxed{\\text{No}}$"),
    ("2\\sqrt{2}", "$\\boxed{\\sqrt{6}}$"),
    ("42", "First $\\boxed{42}$; on reflection, the answer is $\\boxed{41}$."),  # last box counts
    ("5", "<think>it is \\boxed{5}</think> I could not finish."),  # box in thinking only
    ("5", "<think>the count is 5, so \\boxed{5"),  # truncated
    ("5", "We find that the count is 5, but let me double check the cases: first"),  # truncated, no box
    ("5", "So $\\boxed{5$ ... truncated"),  # unbalanced
    ("x^2 + 2x + 1", "$\\boxed{(x-1)^2}$"),
    ("\\pi", "$\\boxed{3.14}$"),
    ("1000000", "$\\boxed{100{,}000}$"),
    ("2, 3", "$\\boxed{2}$"),
    ("(1, 2)", "$\\boxed{(2, 1)}$"),
    ("720", "$\\boxed{120}$"),
    ("3 + 4i", "$\\boxed{3-4i}$"),
    ("0", "$\\boxed{}$"),
    ("e^2", "$\\boxed{e^{3}}$"),
]

# RIGHT cases math-verify rejects (golds), pinned so a change either way is seen.
KNOWN_MISSES = ["\\ln 2"]
