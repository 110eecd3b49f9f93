"""kernprof's ContextualProfile: cProfile switched on and off by count.

The profiler of kernprof's cProfile run (kernprof_cprofile.py), usable as a
decorator and a context manager as kernprof's own is; lprof.kernprof
offers it under kernprof's name."""

import cProfile
import functools
import inspect


class ContextualProfile(cProfile.Profile):
    """cProfile.Profile switched on and off by count, usable as a decorator
    and a context manager, as kernprof's own is."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.enable_count = 0

    def enable_by_count(self, subcalls=True, builtins=True):
        if self.enable_count == 0:
            self.enable(subcalls=subcalls, builtins=builtins)
        self.enable_count += 1

    def disable_by_count(self):
        if self.enable_count > 0:
            self.enable_count -= 1
            if self.enable_count == 0:
                self.disable()

    def __enter__(self):
        self.enable_by_count()
        return self

    def __exit__(self, *exc):
        self.disable_by_count()
        return False

    def __call__(self, func):
        if inspect.isgeneratorfunction(func):

            @functools.wraps(func)
            def gen_wrapper(*args, **kwargs):
                gen = func(*args, **kwargs)
                value = None
                while True:
                    with self:
                        try:
                            item = gen.send(value)
                        except StopIteration as stop:
                            return stop.value
                    value = yield item

            return gen_wrapper

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return wrapper
