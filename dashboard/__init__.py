"""The Streamlit side of the dashboard: what the page scripts in ``pages/`` call.

Streamlit serves every script in ``pages/`` as a page, so each page is a few lines that call
one ``render()`` here; :mod:`evocov_core` computes everything and knows nothing of Streamlit.

By concern:

``state``          page scripts, the sidebar's page list, session-state keys, defaults
``format``         run statuses, algorithm names, numbers, figure layout
``datasets``       the session's dataset: bundled series, uploads, the split, fingerprints
``runs``           the job manager, the run store (typed run records), the runs a session watches
``fits``           reference fits (SE baseline, fixed structures) in a child process
``background``     the child-process runner behind ``fits`` (no Streamlit)
``views``          one kernel drawn: formula, scores, hyperparameters, tree, forecast, components
``average``        a search's model average: mixture, test RMSE, file, view
``sidebar``        the shared sidebar and ``page_setup``
``panel_runs``     panel runs: a folder and a worker process each, resumable (no Streamlit)
``panel_worker``   ``python -m dashboard.panel_worker FOLDER``, the process of one panel run (no Streamlit)
``panel_view``     the Panel page's settings, notes, table, and a series as a run of the store (no Streamlit)

and one module per page: ``data_page`` (+ ``long_table``, its tab for many series), ``search_form`` +
``search_page``, ``results_page`` + ``results_tabs``, ``explorer_page``, ``runs_page``, ``panel_page``.
"""
