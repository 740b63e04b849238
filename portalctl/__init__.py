"""portalctl: the GPU portal's command-line client (standard library only, no Django).

    portalctl configure --url https://portal.example.com --key gpk_…
    portalctl availability --site SZ --node-type h100-8x-nvlink --count 4 --start-date 2027-01-04
    portalctl estimate --site SZ --node-type h100-8x-nvlink --nodes 2 --term month --duration 1 \\
        --start-date 2027-01-04
    portalctl quote create …same options…;  portalctl quote accept Q-SZ-2026-000123 --name "Li Wei"
    portalctl order watch O-SZ-2026-000042;  portalctl ssh-config O-SZ-2026-000042
    portalctl download invoice I-SZ-2026-000042 -o invoice.pdf

Every command takes ``--json`` (print the API's JSON). Errors are the API's problem
details: ``error [code]: detail`` and one line per field, exit status 1 (2 for usage).
"""

__version__ = "1.0.0"
