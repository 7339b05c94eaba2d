from django.contrib import admin

from catalog.admin_history import HistoryAdmin
from sizing_site.fleet.models import InventoryMachine


@admin.register(InventoryMachine)
class InventoryMachineAdmin(HistoryAdmin):
    list_display = ["name", "organization", "accelerator", "card_count", "created_by"]
    list_filter = ["organization"]
    search_fields = ["name", "notes"]
    readonly_fields = ["code", "created", "updated"]
    raw_id_fields = ["accelerator"]
