"""The hostile walk as a viewer of an organization (test_hostile_walk.py has the walk, its
data and the other visitors): the longest walk, in a module of its own so that a parallel
run gives it a worker of its own."""

import pytest

from tests.sizing_site.test_hostile_walk import EXAMPLES, HostileWalkBase


@pytest.mark.slow
class ViewerHostileWalk(HostileWalkBase):
    def test_a_viewer_gets_no_server_error(self) -> None:
        before = type(self).requests
        self.walk(self.bob, budget=EXAMPLES, admin_budget=1)
        print(f"hostile walk, viewer: {type(self).requests - before} requests, 0 server errors")
