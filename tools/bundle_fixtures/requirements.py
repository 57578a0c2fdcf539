"""One fixture per reason id of evidence/ladder.c: a level-6 claim with exactly that requirement broken.
Each level's cases register in req_*.py, in the order their fixtures are written."""
import copy

from .base import over
from . import req_level_4, req_levels_0_3, req_levels_5_6


class Registry:
    def __init__(self):
        self.cases = []  # (name, mutate, computed, findings, description, options)

    def req(self, name, computed, findings, description, options=None, extra_over=True):
        """Registers the decorated mutation: it breaks one requirement of a complete bundle, which then
        proves `computed`; a claim of 6 above that adds over()'s level-0 findings unless extra_over is off."""
        def deco(f):
            self.cases.append((name, f, computed, findings + (over(computed) if extra_over else []), description, options))
            return f
        return deco


def requirements(g, base, arts):
    r = Registry()
    for group in (req_levels_0_3, req_level_4, req_levels_5_6):
        group.register(r.req, g, base, arts)
    for name, mutate, computed, findings, description, options in r.cases:
        b = copy.deepcopy(base)
        mutate(b)
        g.write(f"requirement.{name}.bundle.json", b, computed, findings, description, options=options)
