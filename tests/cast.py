"""The cast every tenancy test shares: Alice and Bob in org A, Charlie alone in org B."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.test import TestCase

from sizing_site.tenancy.models import Membership, Organization, Role


class CastTestCase(TestCase):
    org_a: Organization
    org_b: Organization
    alice: User
    bob: User
    charlie: User
    alice_membership: Membership
    bob_membership: Membership
    charlie_membership: Membership

    @classmethod
    def setUpTestData(cls) -> None:
        cls.org_a = Organization.objects.create(name="Org A", slug="org-a")
        cls.org_b = Organization.objects.create(name="Org B", slug="org-b")
        cls.alice = User.objects.create_user("alice", "alice@a.example", "pw-alice-123")
        cls.bob = User.objects.create_user("bob", "bob@a.example", "pw-bob-123")
        cls.charlie = User.objects.create_user("charlie", "charlie@b.example", "pw-charlie-123")
        add = Membership.all_tenants.create
        cls.alice_membership = add(user=cls.alice, organization=cls.org_a, role=Role.ADMIN)
        cls.bob_membership = add(user=cls.bob, organization=cls.org_a, role=Role.VIEWER)
        cls.charlie_membership = add(user=cls.charlie, organization=cls.org_b, role=Role.ADMIN)
