"""The business settings of the apps: the price book horizon, self-service hold limits,
estimates, the provider on documents, Stripe and the bank account, contracts, invoices
over the term, the inventory's CSV import."""

from portal.settings.base import DEBUG, VAR_DIR, env, secret

# Self-service starts are priced up to this many months ahead (the price book horizon).
PRICE_BOOK_HORIZON_MONTHS = env.int("PRICE_BOOK_HORIZON_MONTHS", default=12)

# Self-service holds per organisation: unpaid orders and the nodes they hold at once
# (lower until the organisation's legal name and tax ID are on file).
SELF_SERVICE_HOLD_LIMITS = {
    "verified": {
        "unpaid_orders": env.int("HOLD_LIMIT_UNPAID_ORDERS", default=3),
        "held_nodes": env.int("HOLD_LIMIT_HELD_NODES", default=64),
    },
    "unverified": {
        "unpaid_orders": env.int("HOLD_LIMIT_UNPAID_ORDERS_UNVERIFIED", default=1),
        "held_nodes": env.int("HOLD_LIMIT_HELD_NODES_UNVERIFIED", default=8),
    },
}

# Anonymous estimates (non-binding quote PDFs): new renders per client and hour, and how
# many days their prices are stated as valid.
ESTIMATE_RENDERS_PER_HOUR = env.int("ESTIMATE_RENDERS_PER_HOUR", default=20)
ESTIMATE_VALID_DAYS = env.int("ESTIMATE_VALID_DAYS", default=7)

# Absolute address of the portal, for links in emails and PDFs.
PORTAL_BASE_URL = env.str("PORTAL_BASE_URL", default="http://127.0.0.1:8000").rstrip("/")

# Support tickets answered by email: the mailbox the customer's replies go to (plus
# addressing: support+T000123-<signature>@example.com). The MTA pipes each message into
# ``manage.py support_inbound_email``. Empty: emails say "reply on the page" only.
PORTAL_SUPPORT_REPLY_ADDRESS = env.str("PORTAL_SUPPORT_REPLY_ADDRESS", default="")

# The provider on quotes and invoices (demo values by default: set them for real use).
PORTAL_PROVIDER_BRAND = env.str("PORTAL_PROVIDER_BRAND", default="GPU Cloud")
PORTAL_PROVIDER_NAME = env.str("PORTAL_PROVIDER_NAME", default="GPU Cloud Ltd. (demo)")
PORTAL_PROVIDER_NAME_ZH = env.str(
    "PORTAL_PROVIDER_NAME_ZH", default="GPU Cloud Ltd.（深圳市智算云科技有限公司，演示）"
)
PORTAL_PROVIDER_ADDRESS = env.str(
    "PORTAL_PROVIDER_ADDRESS",
    default="12/F, Building 8, Science Park South, Nanshan, Shenzhen, Guangdong, China",
)
PORTAL_PROVIDER_ADDRESS_ZH = env.str(
    "PORTAL_PROVIDER_ADDRESS_ZH", default="中国广东省深圳市南山区科技园南区 8 栋 12 层"
)
PORTAL_PROVIDER_EMAIL = env.str("PORTAL_PROVIDER_EMAIL", default="sales@gpucloud.example")
PORTAL_PROVIDER_PHONE = env.str("PORTAL_PROVIDER_PHONE", default="+86 755 0000 0000")
# Who "prepared" a self-service quote: the provider's sales contact (blank: "Sales team").
PORTAL_SALES_CONTACT_NAME = env.str("PORTAL_SALES_CONTACT_NAME", default="")
# ... and their address (blank: PORTAL_PROVIDER_EMAIL).
PORTAL_SALES_CONTACT_EMAIL = env.str("PORTAL_SALES_CONTACT_EMAIL", default="")
# The sender of quote emails: an address the provider's mail domain authorises (SPF/DKIM);
# the display name is "<salesperson> via <brand>" and replies go to the salesperson.
PORTAL_QUOTE_FROM_EMAIL = env.str("PORTAL_QUOTE_FROM_EMAIL", default=PORTAL_PROVIDER_EMAIL)
PORTAL_PROVIDER_WEBSITE = env.str("PORTAL_PROVIDER_WEBSITE", default="gpucloud.example")

# --- Payments -------------------------------------------------------------------------
# Stripe (card, Alipay, WeChat Pay). With no keys (the ``make run`` default) card payment
# says it is not configured and customers pay by bank transfer. ``STRIPE_API_BASE`` points
# the SDK at a local stand-in (localstripe in the integration tests).
STRIPE_SECRET_KEY = secret("STRIPE_SECRET_KEY")
STRIPE_PUBLISHABLE_KEY = env.str("STRIPE_PUBLISHABLE_KEY", default="")
STRIPE_WEBHOOK_SECRET = secret("STRIPE_WEBHOOK_SECRET")
STRIPE_API_BASE = env.str("STRIPE_API_BASE", default="")
STRIPE_PAYMENT_METHODS = env.list(
    "STRIPE_PAYMENT_METHODS", default=["card", "alipay", "wechat_pay"]
)
# The account customers pay invoices into by bank transfer (demo values by default).
PORTAL_BANK_ACCOUNT_NAME = env.str(
    "PORTAL_BANK_ACCOUNT_NAME", default="Demo GPU Cloud (Shenzhen) Co., Ltd."
)
PORTAL_BANK_ACCOUNT_NUMBER = env.str("PORTAL_BANK_ACCOUNT_NUMBER", default="7559 0000 0000 0001")
PORTAL_BANK_NAME = env.str(
    "PORTAL_BANK_NAME", default="China Merchants Bank, Shenzhen Branch (demo)"
)
PORTAL_BANK_SWIFT = env.str("PORTAL_BANK_SWIFT", default="CMBCCNBS")

# Contracts: signing material per seller entity (``<dir>/<site code>/`` and ``default/``:
# ``ca.p12`` + ``ca.pem`` the seller's signing CA, ``seal.p12`` its seal; `make run`
# creates demo ones once), the PKCS#12 passphrase, the signing provider (a dotted path),
# an RFC 3161 timestamping authority ("" none, "demo" an in-process demo TSA, else its
# URL) and the roots that make its certificate trusted (PEM files), the standard terms'
# version, days before the end to offer renewal.
PORTAL_SIGNING_DIR = env.str("PORTAL_SIGNING_DIR", default=str(VAR_DIR / "signing"))
PORTAL_SIGNING_P12_PASSPHRASE = secret(
    "PORTAL_SIGNING_P12_PASSPHRASE", default="demo-seal-passphrase"
)
PORTAL_SIGNING_PROVIDER = env.str(
    "PORTAL_SIGNING_PROVIDER", default="billing.contracts.signatures.PortalCAProvider"
)
PORTAL_SIGNING_CREATE_DEMO_KEYS = env.bool("PORTAL_SIGNING_CREATE_DEMO_KEYS", default=False)
# `make run` (DJANGO_DEBUG) timestamps with the demo TSA; production names a real one.
PORTAL_SIGNING_TSA_URL = env.str("PORTAL_SIGNING_TSA_URL", default="demo" if DEBUG else "")
PORTAL_SIGNING_TSA_TIMEOUT_S = env.int("PORTAL_SIGNING_TSA_TIMEOUT_S", default=10)
PORTAL_SIGNING_TRUST_ROOTS = env.list("PORTAL_SIGNING_TRUST_ROOTS", default=[])
# Countersigning a contract whose total (VAT included) is above this needs a second
# approver besides the authorised signatory (per currency; a currency not named: never).
PORTAL_COUNTERSIGN_SECOND_APPROVAL_ABOVE = {
    "CNY": env.int("PORTAL_COUNTERSIGN_SECOND_APPROVAL_ABOVE_CNY", default=1_000_000),
    "HKD": env.int("PORTAL_COUNTERSIGN_SECOND_APPROVAL_ABOVE_HKD", default=1_000_000),
}
# The public contract verification page: the largest file it checks, and checks per
# client and hour.
CONTRACT_VERIFY_MAX_BYTES = env.int("CONTRACT_VERIFY_MAX_BYTES", default=10 * 1024 * 1024)
CONTRACT_VERIFY_PER_HOUR = env.int("CONTRACT_VERIFY_PER_HOUR", default=30)
PORTAL_TERMS_VERSION = env.str("PORTAL_TERMS_VERSION", default="2026-12")
PORTAL_RENEWAL_DAYS = env.int("PORTAL_RENEWAL_DAYS", default=30)
# seed_demo makes one signed contract (two PDF renderings; the test suite turns it off).
PORTAL_SEED_DEMO_CONTRACT = env.bool("PORTAL_SEED_DEMO_CONTRACT", default=True)
# seed_demo makes the demo customer an order running now (2 H100 nodes, paid: the worker
# provisions it; billing/demo/running.py). The test suite turns it off.
PORTAL_SEED_DEMO_RUNNING_ORDER = env.bool("PORTAL_SEED_DEMO_RUNNING_ORDER", default=True)

# --- Invoices over the term ------------------------------------------------------------
# Later billing periods are issued this many days before they start.
PORTAL_INVOICE_ISSUE_DAYS = env.int("PORTAL_INVOICE_ISSUE_DAYS", default=14)
# A credit note above this gross amount (in its own currency) waits for a second finance
# approval before it is issued (``billing.credits.services.credit_note_request``).
PORTAL_CREDIT_NOTE_APPROVAL_ABOVE = env.str("PORTAL_CREDIT_NOTE_APPROVAL_ABOVE", default="50000")
# The metering system's token for POST /api/usage/ ("" = staff sessions only).
PORTAL_USAGE_API_TOKEN = secret("PORTAL_USAGE_API_TOKEN")

# --- CSV import -----------------------------------------------------------------------
# The admin page imports at most this many rows at once (preview, then confirm); a larger
# file goes to the background import (inventory.csv_jobs), which a worker runs.
INVENTORY_CSV_IMPORT_MAX_SYNC_ROWS = env.int("INVENTORY_CSV_IMPORT_MAX_SYNC_ROWS", default=5000)

# --- Operations (portal/operations) ---
# Customers hear of planned maintenance this many days before it starts (the planner may
# choose another notice per plan). The contract (§7.2) excludes planned maintenance
# announced at least 72 hours ahead from downtime, so a notice under 3 days counts.
PORTAL_MAINTENANCE_NOTICE_DAYS = env.int("PORTAL_MAINTENANCE_NOTICE_DAYS", default=7)
# A hold that expires within this many hours while another request wants its node is shown
# as a conflict on the reservation calendar.
PORTAL_CALENDAR_HOLD_EXPIRY_HOURS = env.int("PORTAL_CALENDAR_HOLD_EXPIRY_HOURS", default=24)
# Rows per page of the reservation calendar.
PORTAL_CALENDAR_PAGE_SIZE = env.int("PORTAL_CALENDAR_PAGE_SIZE", default=100)
